// A node's faults as the leading controller sees them, and the lemon rule over them: decided purely,
// like the rest of decide() (Decide.h). A fault is a job interrupted on the node (Meta's count of
// interruptions per host): a worker fault its agent's supervisor recorded (a crash, a hang, a lost
// device; a restart included), or the node lost under an assignment. Each has an ID (Keys.h,
// kNodeFaultsPrefix) so that a leader after a failover, reading the same statuses again, adds
// nothing that the one before it recorded. A borrower's faults are not the node's: it is frozen,
// ended and moved by design, and one that crashes or outgrows its loan says nothing of the hardware.
#pragma once

#include "cluster/config/ClusterConfig.h"
#include "cluster/controller/ClusterState.h"

#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

// The worker faults of `node` that its statuses count and its history lacks, stamped `nowUnixMs`:
// only a status of the contract's assignment there now (its leader revision) counts.
std::vector<NodeFault> workerFaults(const std::string &node, const ClusterState &state, int64_t nowUnixMs);

// The fault of `a`'s node lost under it, unless its history has it already or `a` borrows.
std::optional<NodeFault> lostFault(const std::string &contract, const AssignedPlan &a, const ClusterState &state,
                                   int64_t nowUnixMs);

// The cordon's reason when `faults` (a node's history and what this round adds, oldest first) hold
// at least `rule.faults` within `rule.withinNs` before `nowUnixMs`, after the last uncordon mark:
// "lemon: 3 faults within 24h: c1: worker-crashed at step 12 (SIGKILL); ...". Nullopt while not.
std::optional<std::string> lemonReason(const std::vector<NodeFault> &faults, const ClusterConfig::Lemon &rule,
                                       int64_t nowUnixMs);

} // namespace msc::cluster
