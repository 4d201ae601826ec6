// A controller of the cluster: campaigns in etcd's election "mscale/controllers" under a lease whose
// keep-alive runs first; the one that leads reconciles (Reconcile.h) whenever nodes, contracts or
// assignments change, every write fenced by its leader key; the others wait inside the campaign.
// When its lease is lost (the process hung, etcd unreachable) it stops leading at once: a later
// leader's create revision is higher, so whatever the old one still tries to write is refused.
#pragma once

#include "cluster/controller/Reconcile.h"
#include "cluster/etcd/Election.h"
#include "cluster/etcd/EtcdClient.h"
#include "cluster/etcd/Fencing.h"
#include "cluster/etcd/Lease.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace msc::cluster {

struct ControllerOptions {
  std::string name;           // this instance, the election value ("controller-a")
  int64_t leaseTtlSeconds = 2; // etcd's minimum with default timings: failover in about that
  std::chrono::milliseconds retryDelay{1000}; // after a term ended, before campaigning again
  ReconcileOptions reconcile;
  std::function<void(const std::string &)> log; // one line per event
  // What the lost-node grace and decide() read the time from (the watch still waits in real time).
  const Clock *clock = &SystemClock::instance();
};

class Controller {
public:
  Controller(etcd::EtcdClient &client, ControllerOptions options);

  // Campaigns, leads while it can, and campaigns again (under a fresh lease, after `retryDelay`)
  // whenever a term ends, logging why (ERR_ETCD_006 lease lost, ERR_CLUSTER_001 fenced, a read or
  // watch failed, etcd unreachable). Returns once `stop` is set.
  etcd::Status run(const std::atomic<bool> &stop);

  // What this controller proclaims as its election value besides its name: the address of its
  // service (ControllerService.h), so that clients find the leader through etcd. Set before run().
  void setServiceAddress(std::string address) { serviceAddress_ = std::move(address); }
  const std::string &name() const { return options_.name; }
  // The injected clock: the service stamps its writes (a cordon's time) with it, like decide().
  const Clock &clock() const { return *options_.clock; }
  // What it reconciles with: the service checks a drain with the same placement (Drain.h).
  const ReconcileOptions &reconcileOptions() const { return options_.reconcile; }
  // The fencing of the term this controller leads now; nullopt while it stands by.
  std::optional<etcd::Fencing> currentTerm() const;

private:
  // One term: a fresh lease, one campaign, leadership until it ends. OK when `stop` ended it.
  etcd::Status serve(const std::atomic<bool> &stop);
  // Reconciles while `leader` holds: OK once `stop` is set, else why the leadership ended.
  etcd::Status lead(const etcd::LeaderKey &leader, etcd::LeaseKeepAlive &keepAlive, const std::atomic<bool> &stop);

  etcd::EtcdClient &client_;
  ControllerOptions options_;
  std::string serviceAddress_;
  mutable std::mutex termMutex_;
  std::optional<etcd::LeaderKey> term_;
};

} // namespace msc::cluster
