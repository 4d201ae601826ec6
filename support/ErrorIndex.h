// Long explanations of diagnostic codes (rustc's error index), compiled in from
// docs/error_codes.md so that `--explain CODE` and the docs can never disagree.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace msc {
std::optional<std::string> explainText(llvm::StringRef code);
} // namespace msc
