// What the leading controller does about the cluster it read (ClusterState.h), decided purely: the
// "decide" of a Kubernetes sync handler. No etcd, and time only from the injected clock: the same
// state, memory and clock give the same actions, so every rule below is unit-tested without a store.
//   - A contract whose every assignment is on a registered node stays, and holds those nodes'
//     resources for the placements decided after it.
//   - A contract without assignments is placed (cluster/placement: the compiler's own check per
//     node), whole or not at all; the cluster config (ApplyConfig.h) fills in scaling defaults and
//     reserves PCIe domains; a config that does not read refuses every placement (ERR_CLUSTER_010).
//   - A contract with an assignment on a node that is gone waits `lostNodeGrace` (its agent stops
//     the workers when it finds its lease gone, which can be a little after etcd expired it), then
//     is placed again, whole; refused, its assignments left are removed too: a job does not run in
//     part. An elastic job (`nodes = MIN..MAX`) is placed, and placed again, at the largest size
//     the cluster can give it whole, so a lost node with no spare shrinks it; every rank is told
//     the size and its share of the global batch (Rendezvous.h).
//   - A withdrawn contract's assignments, status and events go.
//   - Each placement and refusal is an event of the contract (Keys.h: kContractEventsPrefix), said
//     once: a refusal for the same reason round after round is one event.
//   - A node takes no new placement while it is cordoned (/mscale/cordons/<node>), its agent's
//     verdict is `failed`, or its verdict does not read (ERR_CLUSTER_016); what runs there stays
//     (its assignments still hold the node's resources, and the node is not lost). A refusal that
//     such a node could have changed names it and why in its notes. A `degraded` node is placeable.
//   - The cluster config's health.cordon_on cordons a node whose verdict it names, by policy: the
//     cordon is written once and stays when the verdict clears, until an operator uncordons.
//   - A node's faults (NodeFaults.h) are added to its history (/mscale/faults/<node>) once each: the
//     worker faults its agent's statuses count, and the node lost under a contract placed again.
//     The config's health.lemon cordons a node, by policy, once its history holds that many faults
//     within its window, the faults as the reason.
//   - A drained node's jobs move at a snapshot boundary (Drain.h).
//   - An elastic job below its most grows back at a snapshot boundary when the cluster can give it
//     more, taking nothing a waiting job could run on (Grow.h).
//   - Borrowers (class = opportunistic) are placed where other contracts lend, and move when the
//     loan is taken back for good (Borrowers.h).
#pragma once

#include "cluster/controller/ClusterState.h"
#include "cluster/etcd/EtcdClient.h"
#include "support/Clock.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace msc::cluster {

struct ReconcileOptions {
  std::string stdlibDir;       // for the contracts' imports; empty: the driver's default
  std::string compilerVersion; // stamped into the plans
  std::chrono::milliseconds lostNodeGrace{2000};
  // How far ahead of the newest step answered a planned stop is (PlannedStops.h), as time: it
  // covers the answers' age and the ask's way to every rank.
  std::chrono::milliseconds stopLead{3000};
  // Whether the cluster config's health.drain_on drains nodes this round (off inside drainBlockers'
  // own look at a drained cluster, which must not drain anything itself).
  bool policyDrains = true;
  // Whether elastic jobs below their most start growing this round (Grow.h; off inside its own
  // look), and how long a grow waits for the job to stop at a snapshot boundary.
  bool growElastic = true;
  std::chrono::milliseconds growTimeout{60000};
};

struct ReconcileReport {
  std::vector<std::string> placed;   // "contract -> node,node"
  std::vector<std::string> refused;  // "contract: first error"
  std::vector<std::string> replaced; // contracts placed again after a node was lost
  std::vector<std::string> waiting;  // contracts on a lost node, inside the grace period
  std::vector<std::string> withdrawn; // contracts whose assignments were removed with them
  std::vector<std::string> released;  // refused when placed again: their assignments left went too
  std::vector<std::string> unreadableNodes; // ERR_CLUSTER_012 lines, once per registration value
  std::vector<std::string> unreadableHealth; // ERR_CLUSTER_016 lines, once per registration value
  std::vector<std::string> cordoned;        // "node: reason", cordoned by policy this round
  std::vector<std::string> faults;          // "node: TEXT (ID)", recorded this round
  std::vector<std::string> unreadableFaults; // ERR_CLUSTER_019 lines, once per value
  std::vector<std::string> drains;          // "node: what the drain did this round" (Drain.h)
  std::vector<std::string> unreadableDrains; // ERR_CLUSTER_021 lines, once per value
  std::vector<std::string> unreadableLending; // ERR_CLUSTER_022 lines, once per value
  // A planned stop is under way (a drain, a grow): look again before its deadline.
  bool stopping = false;
  int64_t revision = 0;              // the store revision the reconciliation read
};

// One write the leader makes, one transaction (fenced by the leader key, Reconcile.h).
struct ContractAction {
  enum class Kind {
    Withdraw, // applied only while the contract is still withdrawn (a new submission is placed anew)
    Place,    // applied only while the contract is as read (changed since: the next round redoes it)
    Refuse,   // as Place: its status says why, and any assignments it had are removed
    Stop,     // as Place: a planned stop asked of (or withdrawn from) its assignments (PlannedStops.h)
  };
  Kind kind = Kind::Place;
  std::string contract;
  std::vector<etcd::TxnOp> ops;
};

// A cordon the cluster config's policy writes: applied only while the node has none (an operator's
// cordon, or the policy's own from an earlier round, stays as written).
struct CordonAction {
  std::string node;
  etcd::TxnOp op;
};

// A node's history with this round's faults added: applied only while the history is as read (its
// mod revision; 0: absent), so that nothing another writer added is lost (the next round redoes it).
struct FaultAction {
  std::string node;
  int64_t readModRevision = 0;
  etcd::TxnOp op;
};

// A drain record rewritten (timed out): applied only while the record is as read.
struct DrainAction {
  std::string node;
  int64_t readModRevision = 0;
  etcd::TxnOp op;
};

struct Decision {
  std::vector<FaultAction> faults;     // written first: the evidence before the verdicts
  std::vector<DrainAction> drains;     // then new drains (the policy's) and those that timed out
  std::vector<CordonAction> cordons;   // written before the contracts' actions
  std::vector<ContractAction> actions; // withdrawals first, then placements in contract order
  ReconcileReport report;
};

// `leaderRevision`: the create revision of the leader key, stamped into assignments and statuses.
// `clock`: the lost-node grace (monotonic) and the events' stamps (wall time).
Decision decide(const ClusterState &state, ReconcileMemory &memory, const Clock &clock, const ReconcileOptions &options,
                int64_t leaderRevision);

} // namespace msc::cluster
