// A node agent's registration in the cluster: /mscale/nodes/<node> (Keys.h) put under a lease the
// agent keeps alive. While the key exists, controllers may place contracts on the node; when the
// lease is gone (the agent died, hung, or was cut off from etcd past the TTL) the key is gone and a
// controller may place the node's contracts elsewhere. So when the keep-alive reports the lease
// lost, the agent stops every contract it runs: a job must never run on two nodes at once.
//
// Everything that touches the ledger runs on the agent's loop thread (poll): the keep-alive's own
// thread only flags the loss, because NodeLedger is not thread-safe. Registering again after a loss
// runs on a thread of its own: etcd is likely unreachable then, and each attempt may wait for the
// client's call timeout, which the loop (serving the local socket) must not.
#pragma once

#include "cluster/keys/Keys.h"
#include "cluster/etcd/EtcdClient.h"
#include "cluster/etcd/Lease.h"
#include "executor/core/Logger.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace msc::exec {
class NodeLedger;
}

namespace msc::cluster {

struct RegistrationOptions {
  std::string node;
  Registration value;       // topology YAML and agent version
  int64_t ttlSeconds = 5;   // etcd raises anything below its minimum (2 s with default timings)
  // After a loss, how often a fresh registration is tried (etcd unreachable, or the old key still
  // held by a lease etcd has not expired yet).
  std::chrono::milliseconds retryInterval{1000};
};

class NodeRegistration {
public:
  NodeRegistration(etcd::EtcdClient &client, RegistrationOptions options, exec::Logger &log);
  // Stops a re-registration in progress (waits for its etcd call), then revokes the lease: the node
  // leaves the cluster at once instead of after the TTL. Whoever owns the ledger stops the workers
  // before this runs (see ClusterAgent).
  ~NodeRegistration();
  NodeRegistration(const NodeRegistration &) = delete;
  NodeRegistration &operator=(const NodeRegistration &) = delete;

  // Grants a lease, starts its keep-alive, and puts the registration under it in a transaction that
  // applies only while the key is absent. ERR_CLUSTER_002 when another live agent holds the node's
  // key (nothing is written; the lease is revoked); etcd's own codes when etcd cannot be reached.
  etcd::Status registerNode();

  // The node's health changed (HealthReporter.h): the registration carries `health` from now on.
  // Put at once under the current lease while the key is there (from the agent's loop); while the
  // registration is lost, the next registration carries it. etcd's codes when the put fails (the
  // value is kept: the next registration, or the next change, writes it).
  etcd::Status publishHealth(const NodeHealth &health);

  enum class Event { None, Lost, Registered };
  // From the agent's loop. When the lease was lost: releases every contract of `ledger` (stopping
  // its workers), logs ERR_CLUSTER_005, starts registering again in the background (the lost lease
  // revoked first, then a fresh one; the old one is never reused; every retryInterval until it
  // works) and returns Lost. Registered once a fresh registration took over.
  Event poll(exec::NodeLedger &ledger);

  bool registered() const { return keepAlive_ && !keepAlive_->lost(); }
  // The lease of the current registration (0 while lost): status keys are written under it.
  int64_t leaseId() const { return registered() ? keepAlive_->leaseId() : 0; }
  const std::string &node() const { return options_.node; }
  // Test hook and operator's tool: what a partition does, deterministically.
  etcd::LeaseKeepAlive *keepAlive() { return keepAlive_.get(); }

private:
  // Grant, keep-alive, put-if-absent; the running keep-alive on success. Any thread.
  etcd::Status attempt(std::unique_ptr<etcd::LeaseKeepAlive> &out);
  std::string encodedValue(); // options_.value as written, under mutex_
  void reregister(int64_t staleLease);
  void stopRetry();

  etcd::EtcdClient &client_;
  RegistrationOptions options_; // .value under mutex_: the re-registration thread reads it
  exec::Logger &log_;
  std::unique_ptr<etcd::LeaseKeepAlive> keepAlive_;
  bool lossHandled_ = true; // nothing to handle before the first registration
  // The background re-registration: its result waits in fresh_ until poll() takes it over.
  std::thread retry_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unique_ptr<etcd::LeaseKeepAlive> fresh_;
};

} // namespace msc::cluster
