// Numbers with units, as written ("1.5GiB", "70C", "15%"), turned into exact integers: the
// contract language's units, and the tools' command-line durations, from one table.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>

namespace msc {

enum class Dimension { None, Size, Duration, Temperature, Percent, Bandwidth, Steps, Samples };

// The dimension a unit suffix measures, or nullopt for an unknown suffix.
std::optional<Dimension> dimensionOfUnit(llvm::StringRef unit);
// All unit suffixes of a dimension, for "did you mean" suggestions.
llvm::ArrayRef<llvm::StringRef> unitsOf(Dimension dimension);
llvm::StringRef dimensionName(Dimension dimension); // "a size", "a duration", ...

enum class QuantityError { None, Malformed, Overflow, Inexact };

// Converts `number` (digits, optionally ".digits") in `unit` to the dimension's base unit
// (bytes, ns, millidegrees C, ppm, bits/s, steps, samples), exactly: 1.5KiB is 1536, 0.5B is Inexact.
// A number without unit is converted with factor 1.
std::optional<uint64_t> toBaseUnits(llvm::StringRef number, llvm::StringRef unit, QuantityError &error);

// A duration as tools take it on the command line ("500ms", "1.5s", "2min"), in nanoseconds, with
// the contract language's units; a bare number is in `bareUnit`. Nullopt for anything else.
std::optional<uint64_t> parseDurationNs(llvm::StringRef text, llvm::StringRef bareUnit = "s");

// A measured duration for people, rounded: "850 ns", "12.3 us", "4.56 ms", "1.20 s" (the tracer's
// reports, the flame graph's tooltips). Contract values are spelled exactly by formatDuration.
std::string formatMeasuredNs(uint64_t ns);
// A size for people, rounded to one decimal in binary units: "512.0 B", "62.6 GiB" (topology views,
// a node's memory in a diagnostic). Contract values are spelled exactly by formatBytes.
std::string formatMeasuredBytes(uint64_t bytes);

} // namespace msc
