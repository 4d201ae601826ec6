// One reconciliation of the cluster by its leading controller, split as a Kubernetes sync handler:
// read the cluster at one revision (ClusterState.h), decide purely what to do (Decide.h), then write
// each action in a transaction fenced by the leader key, so that a deposed leader writes nothing.
// The placed workers of a contract that moved resume from the disk tier on storage the nodes share.
#pragma once

#include "cluster/controller/ClusterState.h"
#include "cluster/controller/Decide.h"
#include "cluster/etcd/EtcdClient.h"
#include "cluster/etcd/Fencing.h"
#include "support/Clock.h"

#include <functional>
#include <vector>

namespace msc::cluster {

// Applies `txn` under the leadership (etcd::Fencing::commit): ERR_CLUSTER_001 once it is lost.
using FencedCommit = std::function<etcd::Result<etcd::TxnResult>(const etcd::Txn &)>;

// Writes `actions` in order, each in one transaction guarded as its kind says (Decide.h), against
// the state read at `readRevision`. Stops at the first write the store refuses and returns why.
etcd::Status commitActions(const std::vector<ContractAction> &actions, int64_t readRevision,
                           const FencedCommit &commit);

// Writes everything `decision` (decided on the state read at `readRevision`) asks, each write in
// its own transaction guarded as Decide.h says: the fault histories, the drains, the cordons, then
// the contracts' actions. `commit` is the leader's fenced commit, or the simulated store's (sim/).
etcd::Status commitDecision(const Decision &decision, int64_t readRevision, const FencedCommit &commit);

// Reads, decides, writes. Returns ERR_CLUSTER_001 (through Fencing) when the leadership was lost:
// the caller stops leading.
etcd::Result<ReconcileReport> reconcile(etcd::EtcdClient &client, etcd::Fencing &fencing,
                                        const ReconcileOptions &options, ReconcileMemory &memory,
                                        const Clock &clock = SystemClock::instance());

} // namespace msc::cluster
