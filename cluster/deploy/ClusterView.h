// The cluster as mscale-deploy and `mscale-cli cluster topology` show it: the cluster config in
// effect, then per node its PCIe domains and devices (hal/DomainView.h) with the domains the config
// reserves there marked.
#pragma once

#include "cluster/config/ClusterConfig.h"
#include "cluster/deploy/RegisteredNodes.h"

#include <llvm/Support/raw_ostream.h>

namespace msc::cluster {

// "cluster config 'booster'" and one line each for the scaling defaults, the reserved domains and
// the agents' settings.
void printConfigSummary(const ClusterConfig &config, llvm::raw_ostream &os);

// One node's domains; `config` may be null (none published): nothing is marked.
void printNodeDomains(const RegisteredNode &node, const ClusterConfig *config, llvm::raw_ostream &os);

} // namespace msc::cluster
