#include "cluster/etcd/Watch.h"

#include "cluster/etcd/ClientImpl.h"

namespace msc::etcd {

Watch::Watch(EtcdClient::Impl &impl, std::string key, WatchOptions options)
    : impl_(impl), key_(std::move(key)), options_(std::move(options)), nextRevision_(options_.startRevision) {}

Result<std::unique_ptr<Watch>> Watch::start(EtcdClient::Impl &impl, const std::string &key,
                                            const WatchOptions &options) {
  std::unique_ptr<Watch> watch(new Watch(impl, key, options));
  watch->thread_ = std::thread([w = watch.get()] { w->run(); });
  std::unique_lock lock(watch->mutex_);
  // Events are only guaranteed from the moment etcd confirmed the watch: wait for it.
  if (!watch->changed_.wait_for(lock, impl.options.callTimeout,
                                [&] { return watch->created_ || !watch->ended_.ok(); }))
    return Status::make(ErrorCode::ERR_ETCD_003, {"Watch", std::to_string(impl.options.callTimeout.count()),
                                                  impl.endpoints[impl.preferredIndex()].address});
  if (!watch->ended_.ok() && watch->batches_.empty())
    return watch->ended_;
  return watch;
}

Watch::~Watch() {
  cancel();
  if (thread_.joinable())
    thread_.join();
}

void Watch::cancel() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  if (activeStream_)
    activeStream_->TryCancel();
  changed_.notify_all();
}

void Watch::end(Status status) {
  {
    std::lock_guard lock(mutex_);
    if (ended_.ok())
      ended_ = std::move(status);
    changed_.notify_all();
  }
  if (options_.onChange)
    options_.onChange();
}

Result<std::vector<WatchEvent>> Watch::next(Milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return !batches_.empty() || !ended_.ok() || stopping_; });
  if (!batches_.empty()) {
    std::vector<WatchEvent> batch = std::move(batches_.front());
    batches_.pop_front();
    return batch;
  }
  if (!ended_.ok())
    return ended_;
  if (stopping_)
    return Status::make(ErrorCode::ERR_ETCD_005, {"Watch of '" + key_ + "'", "cancelled"});
  return std::vector<WatchEvent>{};
}

namespace {
KeyValue fromProto(const mvccpb::KeyValue &kv) {
  return KeyValue{kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.version(), kv.lease()};
}
} // namespace

void Watch::run() {
  size_t index = impl_.preferredIndex();
  // When the members started failing us; max(): they are not.
  Clock::time_point failingSince = Clock::time_point::max();
  std::string lastError;
  for (;;) {
    Endpoint &endpoint = impl_.endpoints[index % impl_.endpoints.size()];
    grpc::ClientContext context;
    context.AddMetadata("hasleader", "true"); // a member that loses its leader ends the stream
    int64_t startRevision;
    {
      std::lock_guard lock(mutex_);
      if (stopping_)
        return;
      activeStream_ = &context;
      startRevision = nextRevision_;
    }
    auto stream = endpoint.watch->Watch(&context);
    etcdserverpb::WatchRequest request;
    auto *create = request.mutable_create_request();
    create->set_key(key_);
    create->set_range_end(options_.rangeEnd);
    create->set_start_revision(startRevision);
    create->set_prev_kv(options_.prevKv);
    bool finished = false; // ended for good (compacted, cancelled by etcd)
    if (stream->Write(request)) {
      etcdserverpb::WatchResponse response;
      while (stream->Read(&response)) {
        if (response.compact_revision() > 0) {
          end(Status::make(ErrorCode::ERR_ETCD_007, {key_, std::to_string(startRevision),
                                                     std::to_string(response.compact_revision())}));
          finished = true;
          break;
        }
        if (response.canceled()) {
          end(Status::make(ErrorCode::ERR_ETCD_005,
                           {"Watch of '" + key_ + "'", "cancelled by etcd: " + response.cancel_reason()}));
          finished = true;
          break;
        }
        std::vector<WatchEvent> batch;
        int64_t lastRevision = 0;
        for (const auto &event : response.events()) {
          WatchEvent out;
          out.type = event.type() == mvccpb::Event::DELETE ? WatchEvent::Type::Delete : WatchEvent::Type::Put;
          out.kv = fromProto(event.kv());
          if (event.has_prev_kv())
            out.prevKv = fromProto(event.prev_kv());
          lastRevision = std::max(lastRevision, event.kv().mod_revision());
          batch.push_back(std::move(out));
        }
        const bool queued = !batch.empty();
        {
          std::lock_guard lock(mutex_);
          if (response.created()) {
            created_ = true;
            failingSince = Clock::time_point::max();
            // A watch "from now" resumes after the revision it was created at.
            if (nextRevision_ == 0)
              nextRevision_ = response.header().revision() + 1;
          }
          if (queued) {
            nextRevision_ = lastRevision + 1;
            batches_.push_back(std::move(batch));
          }
          changed_.notify_all();
        }
        if (queued && options_.onChange)
          options_.onChange();
      }
    }
    if (finished)
      context.TryCancel();
    grpc::Status status = stream->Finish();
    {
      std::lock_guard lock(mutex_);
      activeStream_ = nullptr;
      if (stopping_ || finished)
        return;
    }
    lastError = endpoint.address + ": " + (status.error_message().empty() ? "stream ended" : status.error_message());
    ++index;
    if (failingSince == Clock::time_point::max())
      failingSince = Clock::now();
    if (Clock::now() - failingSince > impl_.options.callTimeout) {
      std::string all;
      for (const Endpoint &e : impl_.endpoints)
        all += (all.empty() ? "" : ",") + e.address;
      end(Status::make(ErrorCode::ERR_ETCD_002, {all, "Watch", lastError}));
      return;
    }
    std::unique_lock lock(mutex_);
    if (changed_.wait_for(lock, Milliseconds(100), [&] { return stopping_; }))
      return;
  }
}

} // namespace msc::etcd
