#include "cluster/controller/Reconcile.h"

#include "cluster/keys/Keys.h"

namespace msc::cluster {

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

etcd::Result<ReconcileReport> reconcile(etcd::EtcdClient &client, etcd::Fencing &fencing,
                                        const ReconcileOptions &options, ReconcileMemory &memory, const Clock &clock) {
  auto state = readClusterState(client, memory);
  if (!state)
    return state.status();
  Decision decision = decide(*state, memory, clock, options, fencing.leader().rev);
  for (const FaultAction &f : decision.faults) {
    etcd::Txn txn;
    txn.compares.push_back(f.readModRevision ? etcd::Compare::onModRevision(nodeFaultsKey(f.node), etcd::Compare::Op::Equal,
                                                                            f.readModRevision)
                                             : etcd::Compare::absent(nodeFaultsKey(f.node)));
    txn.success.push_back(f.op);
    if (auto done = fencing.commit(txn); !done)
      return done.status();
  }
  for (const DrainAction &d : decision.drains) {
    etcd::Txn txn;
    // As read: absent for a new drain (the policy's), the same revision for one rewritten.
    txn.compares.push_back(d.readModRevision ? etcd::Compare::onModRevision(drainKey(d.node), etcd::Compare::Op::Equal,
                                                                            d.readModRevision)
                                             : etcd::Compare::absent(drainKey(d.node)));
    txn.success.push_back(d.op);
    if (auto done = fencing.commit(txn); !done)
      return done.status();
  }
  for (const CordonAction &c : decision.cordons) {
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::absent(cordonKey(c.node)));
    txn.success.push_back(c.op);
    if (auto done = fencing.commit(txn); !done)
      return done.status();
  }
  etcd::Status written = commitActions(decision.actions, state->revision,
                                       [&](const etcd::Txn &txn) { return fencing.commit(txn); });
  if (!written.ok())
    return written;
  return decision.report;
}

} // namespace msc::cluster
