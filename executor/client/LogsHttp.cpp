#include "executor/client/LogsHttp.h"

#include <llvm/ADT/SmallVector.h>

namespace msc::exec {

std::string logsTarget(const agent::LogsRequest &r) {
  std::string t = kLogsRoute + r.contract() + "?rank=" + std::to_string(r.rank());
  if (r.attempt() >= 0)
    t += "&attempt=" + std::to_string(r.attempt());
  if (r.offset())
    t += "&offset=" + std::to_string(r.offset());
  if (r.max_bytes())
    t += "&max_bytes=" + std::to_string(r.max_bytes());
  return t;
}

std::optional<agent::LogsRequest> parseLogsTarget(llvm::StringRef target, std::string &why) {
  auto [path, query] = target.split('?');
  if (!path.consume_front(kLogsRoute) || path.empty() || path.contains('/')) {
    why = "'" + target.str() + "' is not " + kLogsRoute + "CONTRACT";
    return std::nullopt;
  }
  agent::LogsRequest r;
  // Contract ids are plain words (validContractId): a '%' is refused there, not decoded here.
  r.set_contract(path.str());
  r.set_attempt(-1);
  llvm::SmallVector<llvm::StringRef, 4> params;
  query.split(params, '&', -1, false);
  for (llvm::StringRef param : params) {
    auto [name, value] = param.split('=');
    uint64_t n = 0;
    bool bad = value.getAsInteger(10, n);
    if (name == "rank" && !bad && n <= UINT32_MAX)
      r.set_rank(uint32_t(n));
    else if (name == "attempt" && !bad && n <= INT32_MAX)
      r.set_attempt(int64_t(n));
    else if (name == "offset" && !bad)
      r.set_offset(n);
    else if (name == "max_bytes" && !bad && n <= UINT32_MAX)
      r.set_max_bytes(uint32_t(n));
    else {
      bool known = name == "rank" || name == "attempt" || name == "offset" || name == "max_bytes";
      why = known ? "'" + param.str() + "': " + name.str() + " is a whole number"
                  : "unknown parameter '" + name.str() + "' (rank, attempt, offset, max_bytes)";
      return std::nullopt;
    }
  }
  return r;
}

} // namespace msc::exec
