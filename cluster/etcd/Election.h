// etcd's server-side election (the v3election service): candidates campaign under a lease, the one
// whose key was created first leads, the others wait inside Campaign until it resigns or its lease
// expires. The LeaderKey a campaign returns is the fencing token: its `rev` is the create revision
// of the leader's key, which no later leader can have (see Fencing.h).
//
// Campaign only after the lease's keep-alive runs (EtcdClient::keepAlive + waitRenewed): a campaign
// waits as long as somebody else leads, longer than any TTL, and a candidate whose lease expired
// while it waited would "win" with a key that is already gone.
#pragma once

#include "cluster/etcd/EtcdClient.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace grpc {
class ClientContext;
}

namespace msc::etcd {

struct LeaderKey {
  std::string name;  // the election
  std::string key;   // "<name>/<lease id in hex>": the leader's key
  int64_t rev = 0;   // the key's create revision: the fencing token
  int64_t lease = 0; // the lease the key lives under
};

// Proclamations of an election's leaders, in order (Election::observe).
class LeaseKeepAlive;

class ElectionObserver {
public:
  ~ElectionObserver(); // stops observing
  ElectionObserver(const ElectionObserver &) = delete;
  ElectionObserver &operator=(const ElectionObserver &) = delete;
  // The next leader's key and value, waiting up to `timeout`; nullopt when none came in time.
  Result<std::optional<KeyValue>> next(Milliseconds timeout);

private:
  friend class Election;
  ElectionObserver(EtcdClient::Impl &impl, std::string name);
  void run();

  EtcdClient::Impl &impl_;
  const std::string name_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<KeyValue> leaders_;
  bool stopping_ = false;
  Status ended_;
  grpc::ClientContext *activeStream_ = nullptr;
  std::thread thread_;
};

class Election {
public:
  const std::string &name() const { return name_; }

  // Blocks until this candidate leads (or `timeout`: ERR_ETCD_003; the candidacy is withdrawn).
  // Campaigns under the lease `keepAlive` renews, only once a renewal was confirmed, and reports
  // ERR_ETCD_006 instead of a victory when the lease was lost meanwhile.
  //
  // Do not campaign again at once after a timeout, under the same lease: etcd withdraws a cancelled
  // campaign on its own time (the server resigns the candidate's key when it notices the cancel), and
  // the key of a lease is always the same, so that withdrawal can delete the key a later campaign
  // has just won with. Wait with the form below instead.
  Result<LeaderKey> campaign(LeaseKeepAlive &keepAlive, const std::string &value, Milliseconds timeout);
  // One campaign for as long as it takes: the victory; nullopt once `stop` is set (the call is
  // cancelled, the candidacy withdrawn); ERR_ETCD_006 when the lease is lost. A victory is confirmed
  // by reading the key back: a key withdrawn behind the server's answer is no victory (ERR_ETCD_008).
  Result<std::optional<LeaderKey>> campaignUntil(LeaseKeepAlive &keepAlive, const std::string &value, const std::atomic<bool> &stop);
  // The raw call, for a lease kept alive by other means.
  Result<LeaderKey> campaign(int64_t lease, const std::string &value, Milliseconds timeout);
  // Publishes a new value as the leader; ERR_ETCD_008 when `leader` no longer leads.
  Status proclaim(const LeaderKey &leader, const std::string &value);
  // The current leader's key and value; ERR_ETCD_009 when nobody leads.
  Result<KeyValue> leader();
  // Gives up leadership (deletes the leader key); the next candidate then leads.
  Status resign(const LeaderKey &leader);
  // Streams every change of leader (and proclamation), starting with the current one.
  std::unique_ptr<ElectionObserver> observe();

private:
  friend class EtcdClient;
  Election(EtcdClient::Impl &impl, std::string name) : impl_(&impl), name_(std::move(name)) {}
  EtcdClient::Impl *impl_;
  std::string name_;
};

} // namespace msc::etcd
