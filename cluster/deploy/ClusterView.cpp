#include "cluster/deploy/ClusterView.h"

#include "hal/DomainView.h"
#include "support/Units.h"

#include <llvm/ADT/StringExtras.h>

#include <map>

namespace msc::cluster {

void printConfigSummary(const ClusterConfig &config, llvm::raw_ostream &os) {
  os << config.describe() << "\n";
  std::vector<std::string> defaults;
  if (config.affinityPolicy)
    defaults.push_back("affinity_policy = " + *config.affinityPolicy);
  if (config.crossDomainIo)
    defaults.push_back(std::string("cross_domain_io = ") + (*config.crossDomainIo ? "true" : "false"));
  os << "  scaling defaults: " << (defaults.empty() ? std::string("none") : llvm::join(defaults, ", ")) << "\n";
  // "0000:00 on every node; 0000:e0 on jwb0004, jwb0005": by domain, in the order first written.
  std::vector<std::pair<PciBus, std::vector<std::string>>> byDomain;
  for (const ReservedDomain &r : config.reserved) {
    auto it = llvm::find_if(byDomain, [&](const auto &entry) { return entry.first == r.domain; });
    if (it == byDomain.end())
      it = byDomain.insert(byDomain.end(), {r.domain, {}});
    it->second.push_back(r.node == kEveryNode ? std::string("every node") : r.node);
  }
  std::vector<std::string> reserved;
  for (const auto &[domain, nodes] : byDomain)
    reserved.push_back(domain.str() + " on " + llvm::join(nodes, ", "));
  os << "  reserved PCIe domains: " << (reserved.empty() ? std::string("none") : llvm::join(reserved, "; ")) << "\n";
  if (config.contractCacheTtlNs)
    os << "  agents: contract_cache_ttl = " << formatDuration(Nanoseconds{*config.contractCacheTtlNs}) << "\n";
}

void printNodeDomains(const RegisteredNode &node, const ClusterConfig *config, llvm::raw_ostream &os) {
  if (!node.topology) {
    os << "node " << node.name << ": unreadable registration: " << node.unreadable << "\n";
    return;
  }
  hal::DomainViewOptions options;
  if (config)
    for (const PciBus &domain : config->reservedOn(node.name))
      options.remarks[domain] = "reserved by " + config->describe();
  hal::printDomains(*node.topology, node.name, os, options);
}

} // namespace msc::cluster
