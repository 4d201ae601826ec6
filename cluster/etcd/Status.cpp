#include "cluster/etcd/Status.h"

#include "support/Diagnostic.h"

#include <iterator>

namespace msc::etcd {
namespace {
struct CodeInfo {
  const char *name;
  const char *format;
};
const CodeInfo kCodes[] = {
    {"ok", "ok"},
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) {#CODE, FORMAT},
#include "support/DiagnosticsCluster.def"
#undef DIAG
};
} // namespace

const char *codeName(ErrorCode code) { return kCodes[static_cast<size_t>(code)].name; }

std::optional<ErrorCode> codeFromName(const std::string &name) {
  for (size_t i = 1; i < std::size(kCodes); ++i)
    if (name == kCodes[i].name)
      return static_cast<ErrorCode>(i);
  return std::nullopt;
}

Status Status::make(ErrorCode code, const std::vector<std::string> &args) {
  return Status{code, formatDiag(kCodes[static_cast<size_t>(code)].format, args)};
}

std::string Status::str() const {
  if (ok())
    return "ok";
  return std::string("error[") + codeName(code) + "]: " + message;
}

} // namespace msc::etcd
