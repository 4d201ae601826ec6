#include "cluster/deploy/Deploy.h"

#include "cluster/config/ClusterConfig.h"
#include "cluster/deploy/ClusterView.h"
#include "cluster/deploy/RegisteredNodes.h"
#include "hal/DomainView.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <map>
#include <set>

namespace msc::cluster {

namespace {

using etcd::ErrorCode;

std::string registeredList(const std::vector<RegisteredNode> &nodes) {
  std::vector<std::string> names;
  for (const RegisteredNode &n : nodes)
    names.push_back(n.name);
  return names.empty() ? std::string("none") : llvm::join(names, ", ");
}

} // namespace

int deployConfig(etcd::EtcdClient &client, const DeployRequest &request, llvm::raw_ostream &out,
                 llvm::raw_ostream &err) {
  ConfigSource source(request.file, request.text);
  std::optional<ClusterConfig> config = parseClusterConfig(source);
  if (!config) {
    err << source.printed();
    return 1;
  }
  // The newest registrations: a node that left a moment ago must not pass the check.
  auto registered = readRegisteredNodes(client, etcd::Consistency::Linearizable);
  if (!registered) {
    err << "mscale-deploy: " << registered.status().str() << "\n";
    return 1;
  }
  std::map<std::string, const RegisteredNode *> byName;
  for (const RegisteredNode &n : *registered)
    byName[n.name] = &n;

  // The nodes: each one registered, with a registration that reads. Errors about the command line
  // have no place in the file; those about an entry of the file point at it.
  bool failed = false;
  auto nodeProblem = [&](const std::string &name) -> std::optional<etcd::Status> {
    auto it = byName.find(name);
    if (it == byName.end())
      return etcd::Status::make(ErrorCode::ERR_CLUSTER_011, {name, registeredList(*registered)});
    if (!it->second->topology)
      return etcd::Status::make(ErrorCode::ERR_CLUSTER_012, {name, it->second->unreadable});
    return std::nullopt;
  };
  for (const std::string &name : request.nodes)
    if (std::optional<etcd::Status> problem = nodeProblem(name)) {
      err << "mscale-deploy: " << problem->str() << "\n";
      failed = true;
    }
  std::set<std::string> namedBadly; // each node named by reservations reported once
  for (const ReservedDomain &r : config->reserved)
    if (r.node != kEveryNode && !llvm::is_contained(request.nodes, r.node))
      if (std::optional<etcd::Status> problem = nodeProblem(r.node); problem && namedBadly.insert(r.node).second)
        source.error(*problem, r.nodeAt);
  if (failed || source.failed()) {
    err << source.printed();
    return 1;
  }

  // The reserved domains exist where they apply: a reservation that protects nothing is a typo or a
  // config written for other machines.
  for (const ReservedDomain &r : config->reserved) {
    std::vector<std::string> appliesTo = r.node == kEveryNode ? request.nodes : std::vector<std::string>{r.node};
    for (const std::string &name : appliesTo) {
      const hal::Topology &topology = *byName[name]->topology;
      std::vector<PciBus> domains = hal::pcieDomains(topology);
      if (llvm::is_contained(domains, r.domain))
        continue;
      std::vector<std::string> listed;
      for (const PciBus &d : domains)
        listed.push_back(d.str());
      source.error(etcd::Status::make(ErrorCode::ERR_CLUSTER_013,
                                      {r.domain.str(), name, listed.empty() ? "none" : llvm::join(listed, ", ")}),
                   r.domainAt);
    }
  }
  if (source.failed()) {
    err << source.printed();
    return 1;
  }

  auto published = configureCluster(client, request.text, request.file, request.write);
  if (!published) {
    err << "mscale-deploy: " << published.status().str() << "\n";
    return 1;
  }
  out << "published " << config->describe() << (published->unchanged ? " (unchanged)" : "") << " at revision "
      << published->revision << " by " << published->leader << ", leader-rev " << published->leaderRevision << "\n";
  printConfigSummary(*config, out);
  for (const std::string &name : request.nodes)
    printNodeDomains(*byName[name], &*config, out);
  return 0;
}

} // namespace msc::cluster
