// Writes of an elected leader that a deposed leader cannot make (etcd's "fencing token" idea, as in
// its concurrency package): every write is a transaction whose first compare is
// "the leader key still has the create revision our campaign returned". A leader that was paused
// (SIGSTOP, GC, a partition) past its lease and woke up after a new leader was elected holds a
// LeaderKey whose key is gone or was re-created with a newer revision, so etcd applies nothing and
// the write fails with ERR_CLUSTER_001. Revisions only grow, so the check cannot pass again later.
#pragma once

#include "cluster/etcd/Election.h"

namespace msc::etcd {

class Fencing {
public:
  Fencing(EtcdClient &client, LeaderKey leader) : client_(client), leader_(std::move(leader)) {}

  const LeaderKey &leader() const { return leader_; }

  // Applies `txn` only while the leadership holds. The result's `succeeded` is then whether the
  // caller's own compares held (its success or failure branch ran). ERR_CLUSTER_001 when the
  // leadership is gone (nothing was applied).
  Result<TxnResult> commit(const Txn &txn);
  // Puts and deletes applied together under the leadership; the store's revision after them.
  Result<int64_t> write(const std::vector<TxnOp> &ops);
  // Whether the leadership still holds right now (a linearizable read of the leader key).
  Result<bool> stillLeader();

private:
  Status refused() const;

  EtcdClient &client_;
  LeaderKey leader_;
};

} // namespace msc::etcd
