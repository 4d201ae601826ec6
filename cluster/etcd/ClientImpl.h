// Private to cluster/etcd: the gRPC side of EtcdClient. The only header that includes the code
// generated from etcd's protos; nothing outside this folder sees it.
#pragma once

#include "cluster/etcd/EtcdClient.h"

#include "etcd/etcdserver/api/v3election/v3electionpb/v3election.grpc.pb.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

namespace msc::etcd {

// gRPC deadlines take system_clock time points (it has no conversion from steady_clock).
using Clock = std::chrono::system_clock;

struct Endpoint {
  std::string address; // "127.0.0.1:2379"
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  std::unique_ptr<v3electionpb::Election::Stub> election;
};

// Maps a gRPC status of one call to our code. `what` names the call ("Put", "Campaign").
Status statusFromGrpc(const grpc::Status &status, const std::string &what, const std::string &endpoint,
                      Milliseconds timeout);
// etcd says "etcdserver: no leader" (UNAVAILABLE) when hasleader is set and the member has none.
bool isNoLeader(const grpc::Status &status);

class EtcdClient::Impl {
public:
  explicit Impl(ClientOptions options);

  // Every call: a deadline and the hasleader metadata (see EtcdClient.h), except serializable
  // reads: etcd applies hasleader to every request, and answering without a leader is their point.
  enum class Leader { Required, NotRequired };
  void prepare(grpc::ClientContext &context, Clock::time_point deadline, Leader leader = Leader::Required) const;

  // Runs `attempt(endpoint, context)` on the preferred member, then on the others while they are
  // unreachable, all within one deadline. A refusal that is not about reachability (invalid
  // argument, not leader, ...) is final: another member would say the same.
  using Attempt = std::function<grpc::Status(Endpoint &, grpc::ClientContext &)>;
  Status call(const std::string &what, const Attempt &attempt, Milliseconds timeout,
              Leader leader = Leader::Required);
  Status call(const std::string &what, const Attempt &attempt) {
    return call(what, attempt, options.callTimeout);
  }

  // The member to start with (streams use it too), and the one after it when it failed.
  size_t preferredIndex() const { return preferred.load(); }
  void markPreferred(size_t index) { preferred.store(index); }

  ClientOptions options;
  std::vector<Endpoint> endpoints;
  std::atomic<size_t> preferred{0};
};

} // namespace msc::etcd
