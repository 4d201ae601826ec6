#include "cluster/controller/ApplyConfig.h"

namespace msc::cluster {

std::vector<std::string> applyScalingDefaults(const ClusterConfig &config, ir::Contract &contract) {
  std::vector<std::string> filled;
  ir::PolicyFields &policy = contract.body.policy;
  // No source range: the value was not written in the contract's files, and a caret under some
  // other text would say it was.
  const ir::Origin origin{config.describe(), {}, {}};
  if (config.affinityPolicy && !policy.affinity_policy) {
    policy.affinity_policy = ir::Field<std::string>{*config.affinityPolicy, origin};
    filled.push_back("affinity_policy = " + *config.affinityPolicy);
  }
  if (config.crossDomainIo && !policy.cross_domain_io) {
    policy.cross_domain_io = ir::Field<bool>{*config.crossDomainIo, origin};
    filled.push_back(std::string("cross_domain_io = ") + (*config.crossDomainIo ? "true" : "false"));
  }
  return filled;
}

void reserveDomains(const ClusterConfig &config, NodeRegistry &registry, DiagnosticEngine &diags) {
  std::vector<std::string> names;
  for (const NodeState *node : registry.nodes())
    names.push_back(node->name);
  for (const std::string &name : names)
    registry.reserve(name, Reservation{config.reservedOn(name), config.describe()}, diags);
}

} // namespace msc::cluster
