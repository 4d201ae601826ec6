// What the leading controller does with the cluster config (docs/deploy.md, "What applies when"):
// its scaling defaults fill in what a contract about to be placed does not set, and its reserved
// PCIe domains go into the registry placement reads. Both apply to placements made from then on:
// what already runs stays where it was placed.
#pragma once

#include "cluster/config/ClusterConfig.h"
#include "cluster/placement/NodeRegistry.h"
#include "ir/IR.h"
#include "support/Diagnostic.h"

#include <string>
#include <vector>

namespace msc::cluster {

// Sets `policy.affinity_policy` and `policy.cross_domain_io` where neither the contract nor a
// profile it uses sets them, with an origin that names the config (what diagnostics and the IR
// printer show, and what placement's IO-heavy reason quotes). Returns what it set, as
// "cross_domain_io = false", for the contract's status.
std::vector<std::string> applyScalingDefaults(const ClusterConfig &config, ir::Contract &contract);

// Every registered node gets the domains the config reserves on it (its own entries and those for
// every node), replacing what it had. A reserved domain a node lacks reserves nothing there
// (mscale-deploy refuses such a config for the nodes it is given; a node may join later).
void reserveDomains(const ClusterConfig &config, NodeRegistry &registry, DiagnosticEngine &diags);

} // namespace msc::cluster
