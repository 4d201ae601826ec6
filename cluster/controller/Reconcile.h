// One reconciliation of the cluster by its leading controller: what the cluster should run (the
// contracts submitted under /mscale/contracts/) against what it runs (the assignments under
// /mscale/assignments/ on the nodes registered under /mscale/nodes/). Contracts without a full set
// of live nodes are placed (cluster/placement: the compiler's own check per node) and their
// assignments written in one transaction fenced by the leader key: a deposed leader writes nothing.
// A contract that had an assignment on a node whose lease expired is placed again, whole; the
// workers resume from the disk tier on storage the nodes share. A withdrawn contract's assignments
// are removed (its agents stop its workers). The cluster config at /mscale/config applies to each
// placement (ApplyConfig.h): scaling defaults for what a contract does not set, reserved PCIe
// domains; a config that does not read refuses every placement (ERR_CLUSTER_010) until it does.
#pragma once

#include "cluster/etcd/EtcdClient.h"
#include "cluster/etcd/Fencing.h"
#include "cluster/keys/Keys.h"
#include "hal/Topology.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msc::cluster {

struct ReconcileOptions {
  std::string stdlibDir;       // for the contracts' imports; empty: the driver's default
  std::string compilerVersion; // stamped into the plans
  std::string scratchDir;      // where contract sources are written for the frontend
  // How long a contract on a lost node waits before it is placed again: the node's agent stops its
  // workers when it finds its lease gone, which can be a little after etcd expired it; placing at
  // once could run the job on two nodes for that moment.
  std::chrono::milliseconds lostNodeGrace{2000};
};

// What one leader remembers between reconciliations: when it first saw each contract on a lost node,
// and each node's topology as read from its registration (a reconciliation runs on every change in
// the cluster; reading a thousand registrations' YAML each time would be most of its work), kept
// while the registration's mod revision is the same.
struct ReconcileMemory {
  std::map<std::string, std::chrono::steady_clock::time_point> lostSince;
  struct ParsedNode {
    int64_t modRevision = 0;
    std::shared_ptr<const hal::Topology> topology;
  };
  std::map<std::string, ParsedNode> nodes;
};

struct ReconcileReport {
  std::vector<std::string> placed;   // "contract -> node,node"
  std::vector<std::string> refused;  // "contract: first error"
  std::vector<std::string> replaced; // contracts placed again after a node was lost
  std::vector<std::string> waiting;  // contracts on a lost node, inside the grace period
  std::vector<std::string> withdrawn; // contracts whose assignments were removed with them
  std::vector<std::string> released;  // refused when placed again: their assignments left went too
  std::vector<std::string> unreadableNodes; // ERR_CLUSTER_012 lines, once per registration value
  int64_t revision = 0;              // the store revision the reconciliation read
};

// Reads the cluster's state at one revision and writes what the leader decides, fenced. Returns
// ERR_CLUSTER_001 (through Fencing) when the leadership was lost: the caller stops leading.
etcd::Result<ReconcileReport> reconcile(etcd::EtcdClient &client, etcd::Fencing &fencing,
                                        const ReconcileOptions &options, ReconcileMemory &memory);

} // namespace msc::cluster
