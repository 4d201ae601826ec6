// A client of a real etcd (3.4, v3 API over gRPC), what the cluster's controllers and node agents
// build on. It talks to several members and fails over between them; every call carries a deadline
// and the `hasleader: true` metadata, so a member cut off from the quorum refuses at once
// (ERR_ETCD_004) instead of hanging. No generated protobuf type appears in this header.
//
// Failover: a call goes to the member that last answered; when that member is unreachable
// (UNAVAILABLE) the call moves to the next one within the same deadline. A write whose connection
// broke mid-flight may have been applied: callers that cannot repeat a write guard it with a
// transaction (see Fencing.h), which etcd applies at most once per compare.
#pragma once

#include "cluster/etcd/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace msc::etcd {

using Milliseconds = std::chrono::milliseconds;

struct ClientOptions {
  std::vector<std::string> endpoints; // "127.0.0.1:2379" (an "http://" prefix is accepted)
  Milliseconds callTimeout{5000};     // deadline of every call that does not take its own
  // Reconnecting to a member that went away backs off; etcd's election timeout is 1 s, so a member
  // that comes back is tried again within about that, not after gRPC's default of up to 120 s.
  Milliseconds maxReconnectBackoff{1000};
};

// Parses "a:1,b:2" (ETCD_ENDPOINTS, etcdctl's --endpoints) into endpoints.
Result<std::vector<std::string>> parseEndpoints(const std::string &commaSeparated);

struct KeyValue {
  std::string key;
  std::string value;
  int64_t createRevision = 0;
  int64_t modRevision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

enum class Consistency {
  Linearizable, // goes through the raft leader: sees every write acknowledged before it
  Serializable, // answered by the member itself, without the leader: may be stale, works without quorum
};

struct RangeOptions {
  std::string rangeEnd; // empty: the key alone; see prefixEnd() for "every key under a prefix"
  Consistency consistency = Consistency::Linearizable;
  int64_t limit = 0;    // 0: no limit
  int64_t revision = 0; // 0: the newest
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0; // the store's revision the read saw
  bool more = false;
};

// The range end that makes [prefix, end) cover every key starting with prefix (etcd's convention).
std::string prefixEnd(const std::string &prefix);

// One comparison of a transaction: `target(key) op operand`.
struct Compare {
  enum class Target { CreateRevision, ModRevision, Version, Value };
  enum class Op { Equal, NotEqual, Greater, Less };
  std::string key;
  Target target = Target::CreateRevision;
  Op op = Op::Equal;
  int64_t number = 0; // for the revisions and the version
  std::string value;  // for Target::Value

  static Compare onCreateRevision(std::string key, Op op, int64_t revision);
  static Compare onModRevision(std::string key, Op op, int64_t revision);
  static Compare onValue(std::string key, Op op, std::string value);
  // etcd's idiom for "the key does not exist": its create revision is 0.
  static Compare absent(std::string key) { return onCreateRevision(std::move(key), Op::Equal, 0); }
};

// One operation of a transaction's then/else branch.
struct TxnOp {
  enum class Kind { Put, Delete };
  Kind kind = Kind::Put;
  std::string key;
  std::string value;    // Put
  int64_t lease = 0;    // Put: attach the key to this lease (0: none)
  std::string rangeEnd; // Delete: empty for the key alone

  static TxnOp put(std::string key, std::string value, int64_t lease = 0);
  static TxnOp remove(std::string key, std::string rangeEnd = {});
};

struct Txn {
  std::vector<Compare> compares;
  std::vector<TxnOp> success; // applied when every compare holds
  std::vector<TxnOp> failure; // applied otherwise
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;
};

struct LeaseGrant {
  int64_t id = 0;
  int64_t ttlSeconds = 0; // as granted (etcd raises a TTL below its minimum, 2 s with default timings)
};

// What a member says about itself and the raft group (Maintenance.Status).
struct MemberStatus {
  std::string endpoint;
  uint64_t memberId = 0;
  uint64_t leaderId = 0; // 0: the member knows no leader
  uint64_t raftTerm = 0;
  std::string version;
  bool isLeader() const { return memberId != 0 && memberId == leaderId; }
};

class Watch;
class LeaseKeepAlive;
class Election;
struct WatchOptions;

class EtcdClient {
public:
  // Connects lazily: no member needs to be up yet. ERR_ETCD_001 when the endpoint list is unusable.
  static Result<std::unique_ptr<EtcdClient>> connect(ClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient &) = delete;
  EtcdClient &operator=(const EtcdClient &) = delete;

  const ClientOptions &options() const;

  Result<RangeResult> range(const std::string &key, const RangeOptions &options = {});
  // The value's revision (the store's revision after the put).
  Result<int64_t> put(const std::string &key, const std::string &value, int64_t lease = 0);
  // How many keys were deleted.
  Result<int64_t> remove(const std::string &key, const std::string &rangeEnd = {});
  Result<TxnResult> txn(const Txn &txn);
  // Drops history up to `revision` (watches from older revisions then fail with ERR_ETCD_007).
  Status compact(int64_t revision);

  Result<LeaseGrant> grantLease(int64_t ttlSeconds);
  Status revokeLease(int64_t id);
  // Seconds left; ERR_ETCD_006 when the lease is gone.
  Result<int64_t> leaseTimeToLive(int64_t id);
  // Keeps `lease` alive from a thread of its own until stopped; reports when it is lost.
  std::unique_ptr<LeaseKeepAlive> keepAlive(const LeaseGrant &lease);

  // Events on a key or range from a revision on (see Watch.h).
  Result<std::unique_ptr<Watch>> watch(const std::string &key, const WatchOptions &options);

  // The server-side election service (etcd's v3election), see Election.h.
  Election election(std::string name);

  // The status of one member, asked directly (no failover): which member leads the raft group.
  Result<MemberStatus> memberStatus(const std::string &endpoint);

  class Impl;
  Impl &impl() { return *impl_; }

private:
  explicit EtcdClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace msc::etcd
