// Registering a node under a kept-alive lease; stopping its contracts when the lease is lost.
#include "cluster/agent/NodeRegistration.h"

#include "executor/agent/NodeLedger.h"

#include <vector>

namespace msc::cluster {

NodeRegistration::NodeRegistration(etcd::EtcdClient &client, RegistrationOptions options, exec::Logger &log)
    : client_(client), options_(std::move(options)), log_(log) {}

NodeRegistration::~NodeRegistration() {
  if (!keepAlive_)
    return;
  int64_t id = keepAlive_->leaseId();
  keepAlive_->stop();
  if (!keepAlive_->lost())
    client_.revokeLease(id); // best effort: otherwise the key goes when the TTL runs out
}

etcd::Status NodeRegistration::registerNode() {
  etcd::Result<etcd::LeaseGrant> lease = client_.grantLease(options_.ttlSeconds);
  if (!lease)
    return lease.status();
  // The keep-alive first: the transaction below may wait for a failover longer than a short TTL.
  std::unique_ptr<etcd::LeaseKeepAlive> keepAlive = client_.keepAlive(*lease);
  const std::string key = nodeKey(options_.node);
  etcd::Txn txn;
  txn.compares.push_back(etcd::Compare::absent(key));
  txn.success.push_back(etcd::TxnOp::put(key, encodeRegistration(options_.value), lease->id));
  etcd::Result<etcd::TxnResult> result = client_.txn(txn);
  if (!result || !result->succeeded) {
    keepAlive->stop();
    client_.revokeLease(lease->id);
    if (!result)
      return result.status();
    // Who holds it, for the message; a read that fails only makes the message poorer.
    std::string holder = "unknown";
    if (etcd::Result<etcd::RangeResult> r = client_.range(key); r && !r->kvs.empty())
      holder = std::to_string(r->kvs.front().lease);
    return etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_002, {options_.node, holder});
  }
  keepAlive_ = std::move(keepAlive);
  lossHandled_ = false;
  log_.info("", "registered node '" + options_.node + "' in etcd under lease " + std::to_string(lease->id) +
                    " (TTL " + std::to_string(lease->ttlSeconds) + " s)");
  return {};
}

NodeRegistration::Event NodeRegistration::poll(exec::NodeLedger &ledger) {
  if (keepAlive_ && keepAlive_->lost() && !lossHandled_) {
    lossHandled_ = true;
    // Every contract: a controller may already be placing them elsewhere. release() kills the
    // workers and frees the resources; the assignments in etcd stay and are admitted again once
    // the node is registered anew (if the controller did not move them meanwhile).
    std::vector<std::string> names;
    for (const auto &[name, c] : ledger.contracts())
      names.push_back(name);
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    for (const std::string &name : names) {
      log_.warn(name, "stopping: the node's registration is lost");
      ledger.release(name, diags);
    }
    etcd::Status lost = etcd::Status::make(
        etcd::ErrorCode::ERR_CLUSTER_005, {options_.node, std::to_string(keepAlive_->leaseId()),
                                           keepAlive_->lostStatus().message, std::to_string(names.size())});
    log_.error("", lost.str());
    // The old lease may still live in etcd: the keep-alive gave up on its own clock, or etcd was
    // unreachable and its new raft leader extended every lease when it came back. Until it is
    // revoked the old registration holds the key and a fresh one is refused; revoked before the
    // next registration attempt, not here, so that the loss is handled without waiting on etcd.
    staleLease_ = keepAlive_->leaseId();
    nextTry_ = std::chrono::steady_clock::now();
    return Event::Lost;
  }
  if (registered() || !lossHandled_ || !keepAlive_)
    return Event::None;
  auto now = std::chrono::steady_clock::now();
  if (now < nextTry_)
    return Event::None;
  nextTry_ = now + options_.retryInterval;
  if (staleLease_) {
    etcd::Status revoked = client_.revokeLease(staleLease_);
    // Revoked, or etcd answered that it no longer has it (ERR_ETCD_005): the key is free of it.
    if (!revoked.ok() && revoked.code != etcd::ErrorCode::ERR_ETCD_005) {
      log_.warn("", "cannot revoke the lost lease " + std::to_string(staleLease_) + " yet: " + revoked.str());
      return Event::None;
    }
    staleLease_ = 0;
  }
  etcd::Status s = registerNode();
  if (!s.ok()) {
    log_.warn("", "registering node '" + options_.node + "' again failed: " + s.str());
    return Event::None;
  }
  return Event::Registered;
}

} // namespace msc::cluster
