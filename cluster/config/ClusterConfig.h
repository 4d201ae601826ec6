// The cluster config: what an operator decides for the whole cluster, published by mscale-deploy
// to /mscale/config through the leading controller, which applies it to placements from then on
// (docs/deploy.md says what each key means and when it applies):
//
//   cluster: booster                       # the cluster's name (required)
//   scaling:
//     affinity_policy: pcie_domain_first   # for contracts that set none: pcie_domain_first | numa_first | none
//     cross_domain_io: false               # for contracts that set none
//   pcie_domains:
//     reserved:                            # PCIe domains (root buses) jobs may not use
//       - { node: "*", domain: "0000:00" } # "*": every node
//   agents:
//     contract_cache_ttl: 30s
//   health:
//     cordon_on: [failed]                  # verdicts the leader cordons a node for: degraded | failed
//     drain_on: [failed]                   # verdicts the leader drains a node for (it cordons it too)
//     drain_deadline: 10min                # by when such a drain must have moved the node's jobs
//     lemon: { faults: 3, within: 24h }    # a node with that many faults in that time is cordoned
//
// Read with LLVM's YAML I/O like the node config and the topology format; every problem is
// ERR_CLUSTER_010 with the line and carets (ConfigSource.h).
#pragma once

#include "cluster/config/ConfigSource.h"
#include "support/PciAddress.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

// The `node` of a reservation that applies to every node, present and future.
inline constexpr const char *kEveryNode = "*";
// A config is a few lines; etcd refuses values over 1.5 MiB.
inline constexpr size_t kMaxClusterConfigBytes = 64u << 10;

struct ReservedDomain {
  std::string node; // kEveryNode or a node's name
  PciBus domain;    // a host bridge's PCI domain and root bus ("0000:40")
  TextSpan nodeAt, domainAt;
};

struct ClusterConfig {
  std::string cluster;
  std::optional<std::string> affinityPolicy; // one of the contract field's choices
  std::optional<bool> crossDomainIo;
  std::vector<ReservedDomain> reserved;
  std::optional<uint64_t> contractCacheTtlNs;
  // The health verdicts ("degraded", "failed") for which the leader cordons a node by policy: the
  // cordon stays after the verdict clears, until an operator uncordons the node (it is looked at
  // first). Empty: a failed node is still not placed, but nothing is cordoned.
  std::vector<std::string> cordonOn;
  // The verdicts for which the leader drains a node by policy (cordoned too): its jobs move at a
  // snapshot boundary, by `drainDeadlineNs`, never forced: a job that cannot be placed whole on the
  // other nodes keeps the node from being drained (it stays cordoned) until it can.
  std::vector<std::string> drainOn;
  uint64_t drainDeadlineNs = 600ull * 1000000000; // 10 minutes, as `mscale-cli cluster drain`
  // The lemon rule: a node with `faults` faults (its history, /mscale/faults/<node>) within the
  // last `withinNs` is cordoned by policy, the faults as the reason. Absent: no rule.
  struct Lemon {
    uint32_t faults = 0;
    uint64_t withinNs = 0;
  };
  std::optional<Lemon> lemon;

  // The domains reserved on `node`: its own entries and those for every node, in order, once each.
  std::vector<PciBus> reservedOn(llvm::StringRef node) const;
  // "cluster config 'booster'": how diagnostics and origins name where a value came from.
  std::string describe() const { return "cluster config '" + cluster + "'"; }
};

// The config in `source`, or nullopt with ERR_CLUSTER_010 in `source` for YAML that does not parse,
// an unknown or missing key, a value of the wrong kind or outside its choices, a PCIe domain that is
// not "DDDD:BB", a node name that cannot be one, a domain reserved twice for a node, or text larger
// than kMaxClusterConfigBytes.
std::optional<ClusterConfig> parseClusterConfig(ConfigSource &source);

// The values `scaling.affinity_policy` takes: the contract field's own choices (ir/Fields.def).
std::vector<llvm::StringRef> affinityPolicies();

} // namespace msc::cluster
