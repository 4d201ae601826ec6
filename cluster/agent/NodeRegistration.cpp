// Registering a node under a kept-alive lease; stopping its contracts when the lease is lost.
#include "cluster/agent/NodeRegistration.h"

#include "executor/agent/NodeLedger.h"

#include <vector>

namespace msc::cluster {

NodeRegistration::NodeRegistration(etcd::EtcdClient &client, RegistrationOptions options, exec::Logger &log)
    : client_(client), options_(std::move(options)), log_(log) {}

NodeRegistration::~NodeRegistration() {
  stopRetry();
  if (!keepAlive_)
    return;
  int64_t id = keepAlive_->leaseId();
  keepAlive_->stop();
  if (!keepAlive_->lost())
    client_.revokeLease(id); // best effort: otherwise the key goes when the TTL runs out
}

void NodeRegistration::stopRetry() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (retry_.joinable())
    retry_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = false;
  if (fresh_) { // registered after all, but no one will use it: let it go at once
    fresh_->stop();
    client_.revokeLease(fresh_->leaseId());
    fresh_.reset();
  }
}

etcd::Status NodeRegistration::attempt(std::unique_ptr<etcd::LeaseKeepAlive> &out) {
  etcd::Result<etcd::LeaseGrant> lease = client_.grantLease(options_.ttlSeconds);
  if (!lease)
    return lease.status();
  // The keep-alive first: the transaction below may wait for a failover longer than a short TTL.
  std::unique_ptr<etcd::LeaseKeepAlive> keepAlive = client_.keepAlive(*lease);
  const std::string key = nodeKey(options_.node);
  etcd::Txn txn;
  txn.compares.push_back(etcd::Compare::absent(key));
  txn.success.push_back(etcd::TxnOp::put(key, encodedValue(), lease->id));
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
  log_.info("", "registered node '" + options_.node + "' in etcd under lease " + std::to_string(lease->id) +
                    " (TTL " + std::to_string(lease->ttlSeconds) + " s)");
  out = std::move(keepAlive);
  return {};
}

std::string NodeRegistration::encodedValue() {
  std::lock_guard<std::mutex> lock(mutex_);
  return encodeRegistration(options_.value);
}

etcd::Status NodeRegistration::publishHealth(const NodeHealth &health) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    options_.value.health = health;
  }
  if (!registered())
    return {};
  // Only while the key is there: after a loss it is the next registration's to write, under its
  // own lease (a put now would create a key under a lease that is gone).
  const std::string key = nodeKey(options_.node);
  etcd::Txn txn;
  txn.compares.push_back(etcd::Compare::onCreateRevision(key, etcd::Compare::Op::Greater, 0));
  txn.success.push_back(etcd::TxnOp::put(key, encodedValue(), keepAlive_->leaseId()));
  etcd::Result<etcd::TxnResult> result = client_.txn(txn);
  if (!result)
    return result.status();
  return {};
}

etcd::Status NodeRegistration::registerNode() {
  std::unique_ptr<etcd::LeaseKeepAlive> keepAlive;
  if (etcd::Status s = attempt(keepAlive); !s.ok())
    return s;
  keepAlive_ = std::move(keepAlive);
  lossHandled_ = false;
  return {};
}

void NodeRegistration::reregister(int64_t staleLease) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    etcd::Status s;
    if (staleLease) {
      // The lost lease may still live in etcd: the keep-alive gave up on its own clock, or etcd's
      // raft leader elected after an outage extended every lease. Until it is revoked the old
      // registration holds the key. Revoked, or etcd answered that it is gone (ERR_ETCD_005): free.
      s = client_.revokeLease(staleLease);
      if (s.ok() || s.code == etcd::ErrorCode::ERR_ETCD_005) {
        staleLease = 0;
        s = {};
      }
    }
    std::unique_ptr<etcd::LeaseKeepAlive> keepAlive;
    if (s.ok())
      s = attempt(keepAlive);
    lock.lock();
    if (s.ok()) {
      fresh_ = std::move(keepAlive);
      return;
    }
    log_.warn("", "registering node '" + options_.node + "' again failed: " + s.str() + "; retrying");
    wake_.wait_for(lock, options_.retryInterval, [&] { return stopping_; });
  }
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
    if (retry_.joinable())
      retry_.join(); // a previous re-registration, finished: its result was taken over
    retry_ = std::thread([this, stale = keepAlive_->leaseId()] { reregister(stale); });
    return Event::Lost;
  }
  if (registered() || !lossHandled_ || !keepAlive_)
    return Event::None;
  std::unique_ptr<etcd::LeaseKeepAlive> fresh;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fresh = std::move(fresh_);
  }
  if (!fresh)
    return Event::None;
  retry_.join(); // it returned right after handing fresh_ over
  keepAlive_ = std::move(fresh);
  lossHandled_ = false;
  return Event::Registered;
}

} // namespace msc::cluster
