#include "tools/common/OptionSpelling.h"

#include "support/Quantity.h"

#include <llvm/ADT/StringExtras.h>

namespace msc::tools {

void noteOldSpelling(llvm::StringRef old, llvm::StringRef now, DiagnosticEngine &diags) {
  diags.report(DiagCode::WRN_DRV_001) << old.str() << "write " + now.str();
}

std::optional<uint64_t> durationOption(llvm::StringRef flag, llvm::StringRef text, DiagnosticEngine &diags) {
  std::optional<uint64_t> ns = parseDurationNs(text);
  if (!ns) {
    diags.report(DiagCode::ERR_DRV_005)
        << "--" + flag.str() + " '" + text.str() + "' is not a duration (write it with a unit: 5s, 500ms, 2min)";
    return std::nullopt;
  }
  if (!text.empty() && llvm::all_of(text, [](char c) { return llvm::isDigit(c) || c == '.'; }))
    noteOldSpelling("--" + flag.str() + " " + text.str() + " without a unit",
                    "--" + flag.str() + " " + text.str() + "s", diags);
  return ns;
}

} // namespace msc::tools
