#include "cluster/etcd/Election.h"

#include "cluster/etcd/ClientImpl.h"
#include "cluster/etcd/Lease.h"

namespace msc::etcd {
namespace {
v3electionpb::LeaderKey toProto(const LeaderKey &leader) {
  v3electionpb::LeaderKey out;
  out.set_name(leader.name);
  out.set_key(leader.key);
  out.set_rev(leader.rev);
  out.set_lease(leader.lease);
  return out;
}

KeyValue fromProto(const mvccpb::KeyValue &kv) {
  return KeyValue{kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.version(), kv.lease()};
}

// etcd's election service returns its own refusals as plain errors (code UNKNOWN) with these texts.
bool says(const grpc::Status &status, const char *text) {
  return status.error_message().find(text) != std::string::npos;
}
} // namespace

Result<LeaderKey> Election::campaign(int64_t lease, const std::string &value, Milliseconds timeout) {
  v3electionpb::CampaignRequest request;
  request.set_name(name_);
  request.set_lease(lease);
  request.set_value(value);
  v3electionpb::CampaignResponse response;
  Status status = impl_->call(
      "Campaign of election '" + name_ + "'",
      [&](Endpoint &endpoint, grpc::ClientContext &context) {
        return endpoint.election->Campaign(&context, request, &response);
      },
      timeout);
  if (!status)
    return status;
  const auto &leader = response.leader();
  return LeaderKey{leader.name(), leader.key(), leader.rev(), leader.lease()};
}

Result<LeaderKey> Election::campaign(LeaseKeepAlive &keepAlive, const std::string &value, Milliseconds timeout) {
  const auto start = Clock::now();
  if (!keepAlive.waitRenewed(timeout)) {
    if (keepAlive.lost())
      return keepAlive.lostStatus();
    return Status::make(ErrorCode::ERR_ETCD_003, {"Campaign of election '" + name_ + "' (waiting for the "
                                                  "lease's first renewal)",
                                                  std::to_string(timeout.count()),
                                                  impl_->endpoints[impl_->preferredIndex()].address});
  }
  const auto left = std::max(Milliseconds(1), timeout - std::chrono::duration_cast<Milliseconds>(Clock::now() - start));
  auto won = campaign(keepAlive.leaseId(), value, left);
  // A victory under a lease that expired while we waited is no leadership: the key went with it.
  if (won && keepAlive.lost())
    return keepAlive.lostStatus();
  return won;
}

Result<std::optional<LeaderKey>> Election::campaignUntil(LeaseKeepAlive &keepAlive, const std::string &value,
                                                        const std::atomic<bool> &stop) {
  using namespace std::chrono_literals;
  const std::optional<LeaderKey> stopped;
  while (!keepAlive.waitRenewed(100ms)) {
    if (keepAlive.lost())
      return keepAlive.lostStatus();
    if (stop)
      return stopped;
  }
  // The call has no deadline of its own; this thread cancels it when `stop` is set or the lease is
  // lost (a candidate without a lease must not wait on, let alone win).
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  grpc::ClientContext *active = nullptr;
  std::thread canceller([&] {
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, 50ms, [&] { return done; }))
      if ((stop || keepAlive.lost()) && active)
        active->TryCancel();
  });
  v3electionpb::CampaignRequest request;
  request.set_name(name_);
  request.set_lease(keepAlive.leaseId());
  request.set_value(value);
  v3electionpb::CampaignResponse response;
  // Long enough to outwait any leader; `stop` is how it ends early.
  constexpr Milliseconds kForever = std::chrono::hours(24 * 365);
  Status status = impl_->call(
      "Campaign of election '" + name_ + "'",
      [&](Endpoint &endpoint, grpc::ClientContext &context) {
        {
          std::lock_guard lock(mutex);
          active = &context;
        }
        grpc::Status s = endpoint.election->Campaign(&context, request, &response);
        std::lock_guard lock(mutex);
        active = nullptr;
        return s;
      },
      kForever);
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  finished.notify_all();
  canceller.join();
  if (keepAlive.lost())
    return keepAlive.lostStatus();
  if (stop)
    return stopped;
  if (!status)
    return status;
  LeaderKey won{response.leader().name(), response.leader().key(), response.leader().rev(), response.leader().lease()};
  // Read the key back: it must still be ours, created at the revision we were told.
  etcdserverpb::RangeRequest read;
  read.set_key(won.key);
  etcdserverpb::RangeResponse kv;
  Status readStatus = impl_->call("Range of the leader key", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.kv->Range(&context, read, &kv);
  });
  if (!readStatus)
    return readStatus;
  if (kv.kvs_size() != 1 || kv.kvs(0).create_revision() != won.rev || kv.kvs(0).lease() != won.lease)
    return Status::make(ErrorCode::ERR_ETCD_008, {name_, "Campaign (the leader key was withdrawn behind the victory)"});
  return std::optional<LeaderKey>(std::move(won));
}

Status Election::proclaim(const LeaderKey &leader, const std::string &value) {
  v3electionpb::ProclaimRequest request;
  *request.mutable_leader() = toProto(leader);
  request.set_value(value);
  v3electionpb::ProclaimResponse response;
  grpc::Status refusal;
  Status status = impl_->call("Proclaim", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    refusal = endpoint.election->Proclaim(&context, request, &response);
    return refusal;
  });
  if (!status && says(refusal, "election: not leader"))
    return Status::make(ErrorCode::ERR_ETCD_008, {name_, "Proclaim"});
  return status;
}

Result<KeyValue> Election::leader() {
  v3electionpb::LeaderRequest request;
  request.set_name(name_);
  v3electionpb::LeaderResponse response;
  grpc::Status refusal;
  Status status = impl_->call("Leader", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    refusal = endpoint.election->Leader(&context, request, &response);
    return refusal;
  });
  if (!status && says(refusal, "election: no leader"))
    return Status::make(ErrorCode::ERR_ETCD_009, {name_});
  if (!status)
    return status;
  return fromProto(response.kv());
}

Status Election::resign(const LeaderKey &leader) {
  v3electionpb::ResignRequest request;
  *request.mutable_leader() = toProto(leader);
  v3electionpb::ResignResponse response;
  grpc::Status refusal;
  Status status = impl_->call("Resign", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    refusal = endpoint.election->Resign(&context, request, &response);
    return refusal;
  });
  if (!status && says(refusal, "election: not leader"))
    return Status::make(ErrorCode::ERR_ETCD_008, {name_, "Resign"});
  return status;
}

std::unique_ptr<ElectionObserver> Election::observe() {
  std::unique_ptr<ElectionObserver> observer(new ElectionObserver(*impl_, name_));
  observer->thread_ = std::thread([o = observer.get()] { o->run(); });
  return observer;
}

ElectionObserver::ElectionObserver(EtcdClient::Impl &impl, std::string name) : impl_(impl), name_(std::move(name)) {}

ElectionObserver::~ElectionObserver() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (activeStream_)
      activeStream_->TryCancel();
    changed_.notify_all();
  }
  if (thread_.joinable())
    thread_.join();
}

Result<std::optional<KeyValue>> ElectionObserver::next(Milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return !leaders_.empty() || !ended_.ok(); });
  if (!leaders_.empty()) {
    KeyValue leader = std::move(leaders_.front());
    leaders_.pop_front();
    return std::optional<KeyValue>(std::move(leader));
  }
  if (!ended_.ok())
    return ended_;
  return std::optional<KeyValue>();
}

void ElectionObserver::run() {
  size_t index = impl_.preferredIndex();
  // When the members started failing us; max(): they are not.
  Clock::time_point failingSince = Clock::time_point::max();
  std::string lastKey; // an observer that reconnects is told the current leader again: skip it
  int64_t lastModRevision = 0;
  for (;;) {
    Endpoint &endpoint = impl_.endpoints[index % impl_.endpoints.size()];
    grpc::ClientContext context;
    context.AddMetadata("hasleader", "true");
    {
      std::lock_guard lock(mutex_);
      if (stopping_)
        return;
      activeStream_ = &context;
    }
    v3electionpb::LeaderRequest request;
    request.set_name(name_);
    auto stream = endpoint.election->Observe(&context, request);
    v3electionpb::LeaderResponse response;
    while (stream->Read(&response)) {
      failingSince = Clock::time_point::max();
      if (response.kv().key() == lastKey && response.kv().mod_revision() == lastModRevision)
        continue;
      lastKey = response.kv().key();
      lastModRevision = response.kv().mod_revision();
      std::lock_guard lock(mutex_);
      leaders_.push_back(fromProto(response.kv()));
      changed_.notify_all();
    }
    grpc::Status status = stream->Finish();
    {
      std::lock_guard lock(mutex_);
      activeStream_ = nullptr;
      if (stopping_)
        return;
    }
    ++index;
    if (failingSince == Clock::time_point::max())
      failingSince = Clock::now();
    if (Clock::now() - failingSince > impl_.options.callTimeout) {
      std::lock_guard lock(mutex_);
      ended_ = Status::make(ErrorCode::ERR_ETCD_002,
                            {endpoint.address, "Observe of election '" + name_ + "'", status.error_message()});
      changed_.notify_all();
      return;
    }
    std::unique_lock lock(mutex_);
    if (changed_.wait_for(lock, Milliseconds(100), [&] { return stopping_; }))
      return;
  }
}

} // namespace msc::etcd
