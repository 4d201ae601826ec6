#include "support/Quantity.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace msc {

namespace {
__extension__ typedef unsigned __int128 U128;

struct UnitInfo {
  llvm::StringRef suffix;
  Dimension dimension;
  uint64_t factor; // base units per 1 of this unit
};

constexpr uint64_t kKi = 1024;
const UnitInfo kUnits[] = {
    {"B", Dimension::Size, 1},
    {"KiB", Dimension::Size, kKi},
    {"MiB", Dimension::Size, kKi * kKi},
    {"GiB", Dimension::Size, kKi * kKi * kKi},
    {"TiB", Dimension::Size, kKi * kKi * kKi * kKi},
    {"KB", Dimension::Size, 1000ull},
    {"MB", Dimension::Size, 1000000ull},
    {"GB", Dimension::Size, 1000000000ull},
    {"TB", Dimension::Size, 1000000000000ull},
    {"ns", Dimension::Duration, 1},
    {"us", Dimension::Duration, 1000ull},
    {"ms", Dimension::Duration, 1000000ull},
    {"s", Dimension::Duration, 1000000000ull},
    {"min", Dimension::Duration, 60000000000ull},
    {"h", Dimension::Duration, 3600000000000ull},
    {"C", Dimension::Temperature, 1000},
    {"%", Dimension::Percent, 10000},
    {"bps", Dimension::Bandwidth, 1},
    {"Kbps", Dimension::Bandwidth, 1000ull},
    {"Mbps", Dimension::Bandwidth, 1000000ull},
    {"Gbps", Dimension::Bandwidth, 1000000000ull},
    {"Tbps", Dimension::Bandwidth, 1000000000000ull},
    {"steps", Dimension::Steps, 1},
    {"step", Dimension::Steps, 1},
    {"samples", Dimension::Samples, 1},
    {"sample", Dimension::Samples, 1},
};

const UnitInfo *findUnit(llvm::StringRef unit) {
  for (const UnitInfo &u : kUnits)
    if (u.suffix == unit)
      return &u;
  return nullptr;
}
} // namespace

std::optional<Dimension> dimensionOfUnit(llvm::StringRef unit) {
  if (unit.empty())
    return Dimension::None;
  if (const UnitInfo *u = findUnit(unit))
    return u->dimension;
  return std::nullopt;
}

llvm::ArrayRef<llvm::StringRef> unitsOf(Dimension dimension) {
  static const std::vector<llvm::StringRef> byDimension[] = {
      {},
      {"B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB"},
      {"ns", "us", "ms", "s", "min", "h"},
      {"C"},
      {"%"},
      {"bps", "Kbps", "Mbps", "Gbps", "Tbps"},
      {"steps"},
      {"samples"}};
  return byDimension[static_cast<size_t>(dimension)];
}

llvm::StringRef dimensionName(Dimension dimension) {
  switch (dimension) {
  case Dimension::None: return "a plain number";
  case Dimension::Size: return "a size";
  case Dimension::Duration: return "a duration";
  case Dimension::Temperature: return "a temperature";
  case Dimension::Percent: return "a percentage";
  case Dimension::Bandwidth: return "a bandwidth";
  case Dimension::Steps: return "a step count";
  case Dimension::Samples: return "a number of samples";
  }
  return "a number";
}

std::optional<uint64_t> toBaseUnits(llvm::StringRef number, llvm::StringRef unit, QuantityError &error) {
  error = QuantityError::None;
  uint64_t factor = 1;
  if (!unit.empty()) {
    const UnitInfo *u = findUnit(unit);
    if (!u) {
      error = QuantityError::Malformed;
      return std::nullopt;
    }
    factor = u->factor;
  }
  auto [whole, fraction] = number.split('.');
  if (whole.empty() || !llvm::all_of(whole, [](char c) { return llvm::isDigit(c); }) || !llvm::all_of(fraction, [](char c) { return llvm::isDigit(c); }) ||
      (number.contains('.') && fraction.empty())) {
    error = QuantityError::Malformed;
    return std::nullopt;
  }
  fraction = fraction.rtrim('0'); // "1.000" is exactly 1, however many zeros follow
  // value = (whole * 10^f + fraction) * factor / 10^f, computed exactly in 128 bits.
  U128 scale = 1;
  U128 mantissa = 0;
  for (char c : whole) {
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (mantissa > UINT64_MAX) {
      error = QuantityError::Overflow;
      return std::nullopt;
    }
  }
  for (char c : fraction) {
    if (scale > UINT64_MAX / 10) {
      error = QuantityError::Inexact;
      return std::nullopt;
    }
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    scale *= 10;
  }
  // A product beyond 128 bits is at least 2^128 / 10^19 > UINT64_MAX: an overflow, not a wrap.
  if (mantissa != 0 && factor > ~U128(0) / mantissa) {
    error = QuantityError::Overflow;
    return std::nullopt;
  }
  U128 scaled = mantissa * factor;
  if (scaled % scale != 0) {
    error = QuantityError::Inexact;
    return std::nullopt;
  }
  scaled /= scale;
  if (scaled > UINT64_MAX) {
    error = QuantityError::Overflow;
    return std::nullopt;
  }
  return static_cast<uint64_t>(scaled);
}

std::optional<uint64_t> parseDurationNs(llvm::StringRef text, llvm::StringRef bareUnit) {
  text = text.trim();
  llvm::StringRef number = text.take_while([](char c) { return llvm::isDigit(c) || c == '.'; });
  llvm::StringRef unit = text.drop_front(number.size());
  if (unit.empty())
    unit = bareUnit;
  if (number.empty() || dimensionOfUnit(unit) != Dimension::Duration)
    return std::nullopt;
  QuantityError error = QuantityError::None;
  return toBaseUnits(number, unit, error);
}

std::string formatMeasuredBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4)
    v /= 1024, ++u;
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%.1f %s", v, units[u]);
  return os.str();
}

std::string formatMeasuredNs(uint64_t ns) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (ns < 1000)
    os << ns << " ns";
  else if (ns < 1000000)
    os << llvm::format("%.1f us", ns / 1e3);
  else if (ns < 1000000000)
    os << llvm::format("%.2f ms", ns / 1e6);
  else
    os << llvm::format("%.2f s", ns / 1e9);
  return os.str();
}

} // namespace msc
