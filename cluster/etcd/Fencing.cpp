#include "cluster/etcd/Fencing.h"

namespace msc::etcd {

Status Fencing::refused() const {
  return Status::make(ErrorCode::ERR_CLUSTER_001, {leader_.name, leader_.key, std::to_string(leader_.rev)});
}

Result<bool> Fencing::stillLeader() {
  auto current = client_.range(leader_.key);
  if (!current)
    return current.status();
  return !current->kvs.empty() && current->kvs.front().createRevision == leader_.rev;
}

Result<TxnResult> Fencing::commit(const Txn &txn) {
  // The guard must hold for either branch of the caller to run. etcd has one compare list, so the
  // guard goes first in it and, when the transaction did not succeed, a read tells whether the
  // guard or the caller's compares failed.
  Txn guarded;
  guarded.compares.push_back(Compare::onCreateRevision(leader_.key, Compare::Op::Equal, leader_.rev));
  guarded.compares.insert(guarded.compares.end(), txn.compares.begin(), txn.compares.end());
  guarded.success = txn.success;
  const bool hasFailureBranch = !txn.failure.empty();
  if (!hasFailureBranch) {
    auto result = client_.txn(guarded);
    if (!result)
      return result.status();
    if (result->succeeded)
      return result;
    auto leads = stillLeader();
    if (!leads)
      return leads.status();
    if (!*leads)
      return refused();
    return result; // the caller's compares failed; the leadership holds
  }
  // With a failure branch, "caller's compares failed" must not run it for a deposed leader, so
  // the failure branch runs as a second, guarded transaction of its own.
  auto result = client_.txn(guarded);
  if (!result)
    return result.status();
  if (result->succeeded)
    return result;
  Txn otherwise;
  otherwise.compares.push_back(Compare::onCreateRevision(leader_.key, Compare::Op::Equal, leader_.rev));
  otherwise.success = txn.failure;
  auto fallback = client_.txn(otherwise);
  if (!fallback)
    return fallback.status();
  if (!fallback->succeeded)
    return refused();
  return TxnResult{false, fallback->revision};
}

Result<int64_t> Fencing::write(const std::vector<TxnOp> &ops) {
  Txn txn;
  txn.success = ops;
  auto result = commit(txn);
  if (!result)
    return result.status();
  return result->revision;
}

} // namespace msc::etcd
