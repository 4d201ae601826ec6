// Prometheus text exposition (format 0.0.4) of the agent's state, as operators already scrape it.
#pragma once

#include "executor/client/agent.pb.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::exec {

// `loans`: the node's lending (null when no contract lends or borrows here); the owners' and
// borrowers' own series come from their statuses' `lending`.
std::string renderMetrics(const std::vector<agent::ContractStatus> &contracts,
                          const std::map<std::string, uint64_t> &requests,
                          const std::map<std::string, uint64_t> &refusals,
                          const agent::LoansResponse *loans = nullptr);

} // namespace msc::exec
