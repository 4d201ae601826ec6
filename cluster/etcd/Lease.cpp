#include "cluster/etcd/Lease.h"

#include "cluster/etcd/ClientImpl.h"

namespace msc::etcd {

LeaseKeepAlive::LeaseKeepAlive(EtcdClient::Impl &impl, LeaseGrant lease) : impl_(impl), lease_(lease) {
  thread_ = std::thread([this] { run(); });
}

LeaseKeepAlive::~LeaseKeepAlive() {
  stop();
  if (thread_.joinable())
    thread_.join();
}

void LeaseKeepAlive::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  if (activeStream_)
    activeStream_->TryCancel();
  changed_.notify_all();
}

void LeaseKeepAlive::onLost(std::function<void(const Status &)> callback) {
  std::unique_lock lock(mutex_);
  if (!lost_.ok()) {
    Status lost = lost_;
    lock.unlock();
    callback(lost);
    return;
  }
  onLost_ = std::move(callback);
}

bool LeaseKeepAlive::lost() const {
  std::lock_guard lock(mutex_);
  return !lost_.ok();
}

Status LeaseKeepAlive::lostStatus() const {
  std::lock_guard lock(mutex_);
  return lost_;
}

bool LeaseKeepAlive::waitLost(Milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return lossReported_; });
}

bool LeaseKeepAlive::waitRenewed(Milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return renewals_ > 0 || !lost_.ok(); }) && lost_.ok();
}

int64_t LeaseKeepAlive::renewals() const {
  std::lock_guard lock(mutex_);
  return renewals_;
}

bool LeaseKeepAlive::sleepUnlessStopped(std::unique_lock<std::mutex> &lock, Milliseconds duration) {
  return !changed_.wait_for(lock, duration, [&] { return stopping_; });
}

void LeaseKeepAlive::declareLost(Status status) {
  std::function<void(const Status &)> callback;
  {
    std::lock_guard lock(mutex_);
    lost_ = status;
    callback = onLost_;
  }
  // The callback runs before waitLost() returns: whoever waits for the loss can rely on what the
  // callback did (e.g. a leader that stepped down).
  if (callback)
    callback(status);
  std::lock_guard lock(mutex_);
  lossReported_ = true;
  changed_.notify_all();
}

void LeaseKeepAlive::run() {
  const Milliseconds ttl(lease_.ttlSeconds * 1000);
  // Three renewals per TTL: one that is lost or late still leaves two before the lease expires.
  const Milliseconds interval = std::max(Milliseconds(300), ttl / 3);
  // A stream lives at most half a TTL and is then reopened: a member that hangs without closing
  // the connection (stopped, partitioned) blocks a read, and the deadline frees us in time to
  // renew through another member before the lease runs out.
  const Milliseconds streamLifetime = std::max(Milliseconds(500), ttl / 2);
  Clock::time_point expiresAt = Clock::now() + ttl;
  size_t index = impl_.preferredIndex();
  std::string lastError = "no member answered";

  enum class StreamEnd { Stopped, WriteFailed, ReadFailed, LeaseGone };
  for (;;) {
    Endpoint &endpoint = impl_.endpoints[index % impl_.endpoints.size()];
    grpc::ClientContext context;
    impl_.prepare(context, Clock::now() + streamLifetime);
    {
      std::lock_guard lock(mutex_);
      if (stopping_)
        return;
      activeStream_ = &context;
    }
    auto stream = endpoint.lease->LeaseKeepAlive(&context);
    StreamEnd end = StreamEnd::Stopped;
    for (;;) {
      etcdserverpb::LeaseKeepAliveRequest request;
      request.set_id(lease_.id);
      if (!stream->Write(request)) {
        end = StreamEnd::WriteFailed;
        break;
      }
      etcdserverpb::LeaseKeepAliveResponse response;
      if (!stream->Read(&response)) {
        end = StreamEnd::ReadFailed;
        break;
      }
      // etcd answers a keep-alive of an expired or revoked lease with TTL 0, not an error.
      if (response.ttl() <= 0) {
        end = StreamEnd::LeaseGone;
        break;
      }
      expiresAt = Clock::now() + std::chrono::seconds(response.ttl());
      std::unique_lock lock(mutex_);
      ++renewals_;
      changed_.notify_all();
      if (!sleepUnlessStopped(lock, interval))
        break; // end stays Stopped
    }
    if (end == StreamEnd::Stopped || end == StreamEnd::LeaseGone)
      context.TryCancel();
    grpc::Status status = stream->Finish();
    {
      std::lock_guard lock(mutex_);
      activeStream_ = nullptr;
      if (stopping_)
        return;
    }
    if (end == StreamEnd::LeaseGone) {
      declareLost(Status::make(ErrorCode::ERR_ETCD_006,
                               {std::to_string(lease_.id), "etcd says it expired or was revoked"}));
      return;
    }
    // A write that fails at the stream's own deadline is the planned reopening (same member);
    // anything else moves on to the next member.
    const bool recycled = end == StreamEnd::WriteFailed &&
                          status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    if (!recycled) {
      lastError = endpoint.address + ": " +
                  (status.error_message().empty() ? "stream ended" : status.error_message());
      ++index;
    }
    if (Clock::now() >= expiresAt) {
      declareLost(Status::make(ErrorCode::ERR_ETCD_006,
                               {std::to_string(lease_.id),
                                "no etcd member renewed it within its TTL (last error: " + lastError + ")"}));
      return;
    }
    if (!recycled) {
      std::unique_lock lock(mutex_);
      if (!sleepUnlessStopped(lock, Milliseconds(100)))
        return;
    }
  }
}

} // namespace msc::etcd
