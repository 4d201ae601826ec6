// A watch on a key or range (EtcdClient::watch): a thread reads etcd's Watch stream and queues the
// events; next() hands them out in order. When the member serving it goes away (or loses its
// leader: hasleader), the watch resumes on another member from the revision after the last one it
// delivered, so no event is lost or seen twice. It ends with a coded error when etcd no longer has
// the history it needs (ERR_ETCD_007), when etcd cancels it, or when no member can serve it for
// the client's call timeout.
#pragma once

#include "cluster/etcd/EtcdClient.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace grpc {
class ClientContext;
}

namespace msc::etcd {

struct WatchOptions {
  std::string rangeEnd;      // empty: the key alone; prefixEnd(key): every key under the prefix
  int64_t startRevision = 0; // 0: changes after the watch is created
  bool prevKv = false;       // deliver the previous value with each event
  // Called on the watch's own thread, no lock held, after events were queued or the watch ended:
  // lets a loop that polls next() (a node agent's) wake at once instead of at its next tick.
  std::function<void()> onChange;
};

struct WatchEvent {
  enum class Type { Put, Delete };
  Type type = Type::Put;
  KeyValue kv;     // for a delete: the key and the revision of the deletion
  KeyValue prevKv; // when WatchOptions::prevKv
};

class Watch {
public:
  ~Watch(); // cancels
  Watch(const Watch &) = delete;
  Watch &operator=(const Watch &) = delete;

  // The next batch of events (those of one or more revisions, in order), waiting up to `timeout`;
  // an empty batch when nothing happened in time; a coded error once the watch has ended.
  Result<std::vector<WatchEvent>> next(Milliseconds timeout);
  // Stops watching; next() then reports what was queued, then ERR_ETCD_005 "cancelled".
  void cancel();
  const std::string &key() const { return key_; }

private:
  friend class EtcdClient;
  Watch(EtcdClient::Impl &impl, std::string key, WatchOptions options);
  static Result<std::unique_ptr<Watch>> start(EtcdClient::Impl &impl, const std::string &key,
                                              const WatchOptions &options);
  void run();
  void end(Status status);

  EtcdClient::Impl &impl_;
  const std::string key_;
  const WatchOptions options_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<WatchEvent>> batches_;
  bool created_ = false;
  bool stopping_ = false;
  Status ended_;
  int64_t nextRevision_ = 0; // where a resumed stream starts
  grpc::ClientContext *activeStream_ = nullptr;
  std::thread thread_;
};

} // namespace msc::etcd
