#include "cluster/controller/Reconcile.h"

#include "cluster/keys/Keys.h"

namespace msc::cluster {
namespace {

// `op`, fenced, only while `op.key` is as read: absent when `readModRevision` is 0 (a first write),
// else at that mod revision. A key changed meanwhile is left alone until the next round.
etcd::Status commitAsRead(const FencedCommit &commit, int64_t readModRevision, const etcd::TxnOp &op) {
  etcd::Txn txn;
  txn.compares.push_back(readModRevision
                             ? etcd::Compare::onModRevision(op.key, etcd::Compare::Op::Equal, readModRevision)
                             : etcd::Compare::absent(op.key));
  txn.success.push_back(op);
  if (auto done = commit(txn); !done)
    return done.status();
  return {};
}

} // namespace

etcd::Status commitActions(const std::vector<ContractAction> &actions, int64_t readRevision,
                           const FencedCommit &commit) {
  for (const ContractAction &a : actions) {
    etcd::Txn txn;
    std::string contractKey = std::string(kContractsPrefix) + a.contract;
    if (a.kind == ContractAction::Kind::Withdraw)
      txn.compares.push_back(etcd::Compare::absent(contractKey));
    else
      txn.compares.push_back(etcd::Compare::onModRevision(contractKey, etcd::Compare::Op::Less, readRevision + 1));
    txn.success = a.ops;
    auto done = commit(txn);
    if (!done)
      return done.status();
  }
  return {};
}

etcd::Status commitDecision(const Decision &decision, int64_t readRevision, const FencedCommit &commit) {
  // The evidence first (fault histories), then the drains (the policy's new ones, those timed out).
  for (const FaultAction &f : decision.faults)
    if (etcd::Status s = commitAsRead(commit, f.readModRevision, f.op); !s.ok())
      return s;
  for (const DrainAction &d : decision.drains)
    if (etcd::Status s = commitAsRead(commit, d.readModRevision, d.op); !s.ok())
      return s;
  for (const CordonAction &c : decision.cordons) {
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::absent(cordonKey(c.node)));
    txn.success.push_back(c.op);
    if (auto done = commit(txn); !done)
      return done.status();
  }
  return commitActions(decision.actions, readRevision, commit);
}

etcd::Result<ReconcileReport> reconcile(etcd::EtcdClient &client, etcd::Fencing &fencing,
                                        const ReconcileOptions &options, ReconcileMemory &memory, const Clock &clock) {
  auto state = readClusterState(client, memory);
  if (!state)
    return state.status();
  Decision decision = decide(*state, memory, clock, options, fencing.leader().rev);
  if (etcd::Status written = commitDecision(decision, state->revision,
                                             [&](const etcd::Txn &txn) { return fencing.commit(txn); });
      !written.ok())
    return written;
  return decision.report;
}

} // namespace msc::cluster
