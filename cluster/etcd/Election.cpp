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
