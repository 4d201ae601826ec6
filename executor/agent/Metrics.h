// Prometheus text exposition (format 0.0.4) of the agent's state, as operators already scrape it.
#pragma once

#include "executor/client/agent.pb.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::exec {

std::string renderMetrics(const std::vector<agent::ContractStatus> &contracts,
                          const std::map<std::string, uint64_t> &requests,
                          const std::map<std::string, uint64_t> &refusals);

} // namespace msc::exec
