#include "worker/snapshot/Snapshot.h"

#include "support/DiagFormat.h"

#include <cstring>

namespace msc::snapshot {
namespace {
struct CodeInfo {
  const char *name;
  const char *format;
};
const CodeInfo kCodes[] = {
    {"ok", "ok"},
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) {#CODE, FORMAT},
#include "support/DiagnosticsSnapshot.def"
#undef DIAG
};
} // namespace

const char *codeName(ErrorCode code) { return kCodes[static_cast<size_t>(code)].name; }

int codeNumber(ErrorCode code) { return static_cast<int>(code); }

Status Status::make(ErrorCode code, std::vector<std::string> args) {
  Status s;
  s.code = code;
  s.message = fillDiagFormat(kCodes[static_cast<size_t>(code)].format, args);
  return s;
}

std::string Status::str() const {
  if (ok())
    return "ok";
  return std::string("error[") + codeName(code) + "]: " + message;
}

const char *tierName(Tier tier) { return tier == Tier::Memory ? "memory" : "disk"; }

} // namespace msc::snapshot
