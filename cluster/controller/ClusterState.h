// What the leading controller reads of the cluster before it decides, in one linearizable read
// (the "snapshot" of a Kubernetes sync handler): the registered nodes and their topologies, the
// submitted contracts, the published config and the assignments, all at one store revision. Read
// here, decided in Decide.h, written in Reconcile.h.
#pragma once

#include "cluster/etcd/EtcdClient.h"
#include "cluster/keys/Keys.h"
#include "cluster/controller/ContractCheck.h"
#include "hal/Topology.h"
#include "plan/plan.pb.h"

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

struct AssignedPlan {
  std::string node;
  std::string key; // /mscale/assignments/<node>/<contract>
  Assignment assignment;
  // The plan decoded once per read (null when it does not decode: the agent refuses it), shared by
  // the copies of the state a round makes.
  std::shared_ptr<const plan::Plan> decoded = {};
  // The store revision the assignment was written at: which placement of the contract it is (a
  // contract placed again on the same node by the same leader is another).
  int64_t modRevision = 0;
  // Its plan borrows (class = opportunistic): it holds nothing of the node.
  bool borrower() const { return decoded && decoded->has_borrow(); }
};

struct ClusterState {
  int64_t revision = 0; // the store revision everything below was read at
  // Every registered node; a null topology when its registration does not read (it places nothing).
  std::map<std::string, std::shared_ptr<const hal::Topology>> nodes;
  // The address each node advertises (Registration::address); absent when it says none.
  std::map<std::string, std::string> addresses;
  std::map<std::string, std::string> contracts;             // name -> its submission as stored
  std::map<std::string, std::string> events;                // name -> its events as stored (Keys.h)
  std::set<std::string> decided;                            // names with a leader's decision stored
  std::optional<std::string> config;                        // /mscale/config, when published
  std::map<std::string, std::vector<AssignedPlan>> assigned; // contract -> its assignments
  std::vector<std::string> unreadableNodes; // ERR_CLUSTER_012 lines, once per registration value
  // The verdict each registered node publishes (absent: it judges none, e.g. an older agent).
  std::map<std::string, NodeHealth> health;
  // Nodes whose health lines do not read, with the ERR_CLUSTER_016 line: not placeable (an agent
  // that writes a verdict nobody can read may be failing itself, and "unknown" is not "healthy").
  std::map<std::string, std::string> unreadableHealth;
  std::vector<std::string> unreadableHealthNew; // the same lines, once per registration value
  // /mscale/cordons/<node>; a value that does not read stands as a cordon whose reason says so
  // (someone meant to take the node out; placing on it would be the worse mistake).
  std::map<std::string, Cordon> cordons;
  // /mscale/status/<node>/<contract> as the agents wrote them (a value that does not read is left
  // out): node -> contract -> status.
  std::map<std::string, std::map<std::string, AssignmentStatus>> statuses;
  // /mscale/faults/<node> and the mod revision it was read at (the leader writes it only as read).
  struct FaultHistory {
    std::vector<NodeFault> faults;
    int64_t modRevision = 0;
  };
  std::map<std::string, FaultHistory> faults;
  // Nodes whose history does not read, with the ERR_CLUSTER_019 line: not written over.
  std::map<std::string, std::string> unreadableFaults;
  std::vector<std::string> unreadableFaultsNew; // the same lines, once per value
  // /mscale/drains/<node>, with its mod revision, which is the drain's id: the service writes a
  // drain once (again only over one that timed out: a new drain, a new id), and the leader rewrites
  // it only when it times out, after which its id asks nothing any more.
  struct DrainRecord {
    Drain drain;
    int64_t modRevision = 0;
  };
  std::map<std::string, DrainRecord> drains;
  std::set<std::string> unreadableDrains;       // nodes whose drain does not read: nothing moved
  std::vector<std::string> unreadableDrainsNew; // their ERR_CLUSTER_021 lines, once per value
  // /mscale/lending/<node> as each agent publishes it (Keys.h: LendingRecord). A node without one,
  // or whose record does not read or stands under no lease, lends nothing (Borrowers.h).
  std::map<std::string, LendingRecord> lending;
  std::set<std::string> unreadableLending;       // nodes whose record does not read
  std::vector<std::string> unreadableLendingNew; // their ERR_CLUSTER_022 lines, once per value
};

// What one leader remembers between reconciliations, so that a reconciliation on every change of
// the cluster does not redo what did not change:
//   - when it first saw each contract on a lost node (the grace before it is placed again);
//   - each node's topology as read from its registration, while the registration's mod revision is
//     the same (reading a thousand registrations' YAML each time would be most of the work);
//   - each submission compiled, while its stored bytes are the same (a contract that waits for
//     capacity is checked again on every change, but parsed once).
struct ReconcileMemory {
  std::map<std::string, uint64_t> lostSinceNs; // monotonic (support/Clock.h)
  struct ParsedNode {
    int64_t modRevision = 0;
    std::shared_ptr<const hal::Topology> topology;
    std::string address = {};
    std::optional<NodeHealth> health = {};
    std::string healthUnreadable = {}; // the ERR_CLUSTER_016 line
  };
  std::map<std::string, ParsedNode> nodes;
  struct CompiledSubmission {
    std::string value;                 // the submission as stored
    std::optional<Submission> submission;
    std::shared_ptr<llvm::SourceMgr> sources; // what the IR's locations point into
    std::optional<LoadedContract> loaded;     // none: it does not decode or compile
    std::string diagnostics;           // what decoding and compiling printed
  };
  std::map<std::string, CompiledSubmission> compiled;
  // Each assignment decoded, plan included, while its value is the same: a round reads every
  // assignment of the cluster, and decoding each plan again was much of a round at 2,000 nodes.
  struct DecodedAssignment {
    std::string value;
    std::optional<Assignment> assignment; // none: the value does not read
    std::shared_ptr<const plan::Plan> plan;
  };
  std::map<std::string, DecodedAssignment> assignments;
  std::map<std::string, int64_t> unreadableFaultsAt; // node -> mod revision of the history reported
  std::map<std::string, int64_t> unreadableDrainsAt; // node -> mod revision of the drain reported
  std::map<std::string, int64_t> unreadableLendingAt; // node -> mod revision of the lending record reported
  // Nodes the cluster config's drain_on would drain but a job there cannot be placed whole elsewhere:
  // said once, not every round.
  std::set<std::string> policyDrainsBlocked;
  // Grows under way (Grow.h): when this leader first saw each one's ask (monotonic), and the
  // placements whose grow timed out, not asked again (contract -> its placement).
  std::map<std::string, uint64_t> growSinceNs;
  std::map<std::string, std::string> growGivenUp;
  // The jobs whose last look found no room to grow, with what the cluster was then (Grow.cpp).
  std::map<std::string, std::string> growNoRoom;
};

// The state in `kvs` (the keys under /mscale/ read at `revision`). Registrations are decoded through
// `memory.nodes`, which forgets the nodes no longer registered.
ClusterState clusterStateFrom(const std::vector<etcd::KeyValue> &kvs, int64_t revision, ReconcileMemory &memory);

// One linearizable read of everything under /mscale/.
etcd::Result<ClusterState> readClusterState(etcd::EtcdClient &client, ReconcileMemory &memory);

} // namespace msc::cluster
