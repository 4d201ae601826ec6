// One vocabulary across the tools: each concept has one option spelling (--topology, --endpoints,
// --lease-ttl with a unit), and an older spelling still works for a while, with a WRN_DRV_001 note
// saying what to write instead, as compilers deprecate flags. The older spelling is declared as a
// hidden option beside the current one and folded into it here, after parsing.
#pragma once

#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>

#include <cstdint>
#include <optional>
#include <string>

namespace msc::tools {

// Reports that `old` was given and that `now` is the option's spelling (WRN_DRV_001).
void noteOldSpelling(llvm::StringRef old, llvm::StringRef now, DiagnosticEngine &diags);

// When `old` was given: notes it and, unless `now` was given too (the current spelling wins),
// takes its value into `now`.
template <class T>
void takeOldSpelling(llvm::cl::opt<T> &now, const llvm::cl::opt<T> &old, DiagnosticEngine &diags) {
  if (!old.getNumOccurrences())
    return;
  noteOldSpelling("--" + old.ArgStr.str(), "--" + now.ArgStr.str(), diags);
  if (!now.getNumOccurrences())
    now.setValue(old.getValue());
}

// The value of duration option `flag` ("5s", "500ms", "1.5min"), in nanoseconds. A bare number,
// the older spelling, is read in seconds with WRN_DRV_001; anything else is ERR_DRV_005 (nullopt).
std::optional<uint64_t> durationOption(llvm::StringRef flag, llvm::StringRef text, DiagnosticEngine &diags);

} // namespace msc::tools
