// Long explanations of diagnostic codes (rustc's error index), compiled in from
// docs/error_codes.md so that `--explain CODE` and the docs can never disagree.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>

namespace msc {
class DiagnosticEngine;

std::optional<std::string> explainText(llvm::StringRef code);
// `--explain CODE` for every tool: prints the explanation, or reports ERR_DRV_002 and returns false.
bool printExplanation(llvm::StringRef code, llvm::raw_ostream &os, DiagnosticEngine &diags);
} // namespace msc
