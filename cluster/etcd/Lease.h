// Keeps an etcd lease alive from a thread of its own (EtcdClient::keepAlive), and says when it is
// lost: etcd answered that the lease is gone (expired, revoked), or no member renewed it before its
// TTL ran out. Whoever holds something under the lease (a registration, an election candidacy) must
// treat a loss as "everything under it is gone" (ERR_ETCD_006).
//
// Start it before using the lease for anything that blocks, e.g. before Election::campaign: a
// campaign can wait longer than the TTL, and winning while the lease expired wins nothing.
#pragma once

#include "cluster/etcd/EtcdClient.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace grpc {
class ClientContext;
}

namespace msc::etcd {

class LeaseKeepAlive {
public:
  // Stops keeping the lease alive (does not revoke it: it expires after its TTL).
  ~LeaseKeepAlive();
  LeaseKeepAlive(const LeaseKeepAlive &) = delete;
  LeaseKeepAlive &operator=(const LeaseKeepAlive &) = delete;

  int64_t leaseId() const { return lease_.id; }
  // Stops sending keep-alives; the lease then expires after its TTL. Idempotent.
  void stop();

  // Called once, from the keep-alive thread, when the lease is lost. Set it right after creating;
  // a loss that happened before is reported at once.
  void onLost(std::function<void(const Status &)> callback);
  bool lost() const;
  Status lostStatus() const; // ok while not lost
  // Blocks until the lease is lost (and the onLost callback, if any, has run) or `timeout` passes;
  // true when lost.
  bool waitLost(Milliseconds timeout);
  // Blocks until etcd confirmed at least one renewal (the keep-alive runs) or the lease was lost.
  bool waitRenewed(Milliseconds timeout);
  int64_t renewals() const;

private:
  friend class EtcdClient;
  LeaseKeepAlive(EtcdClient::Impl &impl, LeaseGrant lease);
  void run();
  void declareLost(Status status);
  // Sleeps up to `duration` unless stopped; false when stopped.
  bool sleepUnlessStopped(std::unique_lock<std::mutex> &lock, Milliseconds duration);

  EtcdClient::Impl &impl_;
  const LeaseGrant lease_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  Status lost_;
  bool lossReported_ = false; // lost_ is set and the onLost callback has returned
  int64_t renewals_ = 0;
  std::function<void(const Status &)> onLost_;
  grpc::ClientContext *activeStream_ = nullptr; // cancelled by stop()
  std::thread thread_;
};

} // namespace msc::etcd
