#include "support/ErrorIndex.h"

#include "support/Diagnostic.h"

#include <llvm/ADT/StringMap.h>

namespace msc {

namespace {
struct Entry {
  const char *code;
  const char *text;
};
constexpr Entry kEntries[] = {
#include "support/ErrorIndex.inc"
};
} // namespace

std::optional<std::string> explainText(llvm::StringRef code) {
  static const llvm::StringMap<const char *> index = [] {
    llvm::StringMap<const char *> map;
    for (const Entry &e : kEntries)
      map[e.code] = e.text;
    return map;
  }();
  auto it = index.find(code.upper());
  if (it == index.end())
    return std::nullopt;
  return std::string(it->second);
}

bool printExplanation(llvm::StringRef code, llvm::raw_ostream &os, DiagnosticEngine &diags) {
  if (std::optional<std::string> text = explainText(code)) {
    os << *text;
    return true;
  }
  diags.report(DiagCode::ERR_DRV_002) << code;
  return false;
}

} // namespace msc
