// A contract's worker output over the agent's HTTP endpoint, for readers on other machines
// (`mscale-cli cluster logs`, curl): the LogsRequest of the agent protocol spelled as a URL,
//   GET /logs/CONTRACT?rank=R&attempt=N&offset=O&max_bytes=M   (each parameter optional)
// answered as plain text (the output itself; a diagnostic line with 400 or 404), or, to a client
// that accepts kProtobufType, as the agent protocol's Response, so that it reads exactly what the
// socket would have answered. The one place that spells the route, for the agent and its clients.
#pragma once

#include "executor/client/Protocol.h"

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace msc::exec {

inline constexpr const char *kLogsRoute = "/logs/";
inline constexpr const char *kProtobufType = "application/x-protobuf";

std::string logsTarget(const agent::LogsRequest &r);
// nullopt with `why` when `target` is not a logs route or its query is not one of a LogsRequest
// (an unknown parameter, a value that is not a number).
std::optional<agent::LogsRequest> parseLogsTarget(llvm::StringRef target, std::string &why);

} // namespace msc::exec
