// The cluster as `mscale-cli cluster status` and `cluster nodes` show it, like `kubectl describe`
// and `kubectl get nodes`: made purely from the keys of one read of /mscale/ (statusOf), so that
// what is shown is unit-tested without etcd, then printed as text or JSON.
//   - A contract: the leader's decision (placed on which nodes, refused, or not decided yet), the
//     diagnostics that decided it, the scaling defaults the cluster config filled in, its events,
//     and what each node made of its assignment (the worker, its exit, the messages).
//   - A node: ready (registered) or not ready (its assignments are still there, its registration is
//     gone: the agent stopped or its lease expired), its GPUs and cores and how many the admitted
//     plans hold, the contracts assigned to it; its health verdict and reasons; whether it is
//     cordoned, by whom and why (a cordoned node takes no new placement); whether it is drained;
//     what the contracts with phases there lend to borrowers.
#pragma once

#include "cluster/etcd/EtcdClient.h"
#include "cluster/keys/Keys.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

struct ContractOnNode {
  std::string node;
  std::optional<AssignmentStatus> status; // nullopt: none written yet (or the node is gone)
  bool unreadable = false;                // a status that does not read
};

struct ContractView {
  std::string name;
  std::string decision;           // "placed", "refused", or "pending" (submitted, not decided yet)
  std::vector<std::string> nodes; // placed on, in rank order
  int64_t leaderRevision = 0;
  std::string decisionLine;       // the stored first line, as the leader wrote it
  std::string defaults;           // "defaults from cluster config ...", when the config filled some in
  std::vector<std::string> diagnostics; // the diagnostics that refused it, as printed
  std::vector<ContractEvent> events;
  std::vector<ContractOnNode> onNodes;
};

struct NodeView {
  std::string name;
  bool ready = false;
  std::string notReady; // why, when not ready
  std::string agentVersion, address;
  std::string http; // the agent's HTTP endpoint, where `cluster logs` reads its workers' output
  unsigned gpus = 0, gpusUsed = 0, cores = 0, coresUsed = 0, rdma = 0, nvme = 0, numaNodes = 0;
  std::vector<std::string> contracts; // assigned here
  // "healthy", "degraded", "failed" as the agent published it; "unknown" when it publishes none;
  // "unreadable" when its health lines do not read (healthUnreadable says why).
  std::string health = "unknown";
  std::vector<HealthReason> healthReasons;
  std::string healthUnreadable;
  std::optional<Cordon> cordon; // set while the node is cordoned (an unreadable value: by "unknown")
  std::optional<Drain> drain;   // set while a drain is recorded (Drain.h), with its id (the record's revision)
  int64_t drainId = 0;
  std::string drainUnreadable;  // why its drain record does not read (then `drain` is unset)
  std::optional<LendingRecord> lending; // what its owners lend, as its agent publishes it
  std::string lendingUnreadable;        // why its lending record does not read (then `lending` is unset)
};

struct ClusterStatusView {
  std::vector<ContractView> contracts; // by name
  std::vector<NodeView> nodes;         // by name
};

ClusterStatusView statusOf(const std::vector<etcd::KeyValue> &kvs);
// A serializable read of /mscale/: any member answers, even without a raft leader.
etcd::Result<ClusterStatusView> readClusterStatus(etcd::EtcdClient &client);

// Where rank `rank` of a placed job prints: the rank-th node of its placement (one worker a node) and
// that node's HTTP endpoint, for `mscale-cli cluster logs`. nullopt with `why` when there is none to
// ask: no such contract, not placed, no such rank, the node not ready or serving no endpoint.
struct RankOutput {
  std::string node, http;
};
std::optional<RankOutput> rankOutputOf(const ClusterStatusView &view, const std::string &contract, unsigned rank,
                                       std::string &why);

// The jobs of `jobs` still placed on `node`, in the order given: what a drain of it has not moved yet
// (a job withdrawn or ended meanwhile is no longer placed there).
std::vector<std::string> jobsStillOn(const ClusterStatusView &view, const std::string &node,
                                     const std::vector<std::string> &jobs);

// `only`: one contract (empty: all). False when `only` names no contract.
bool printContracts(const ClusterStatusView &view, const std::string &only, llvm::raw_ostream &os);
llvm::json::Value contractsJson(const ClusterStatusView &view, const std::string &only);
void printNodes(const ClusterStatusView &view, llvm::raw_ostream &os);
llvm::json::Value nodesJson(const ClusterStatusView &view);

} // namespace msc::cluster
