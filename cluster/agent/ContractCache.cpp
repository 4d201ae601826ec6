#include "cluster/agent/ContractCache.h"

namespace msc::cluster {

void ContractCache::setTtl(std::chrono::nanoseconds ttl) {
  ttl_ = ttl;
  if (ttl_.count() <= 0)
    entries_.clear(); // caching was turned off: nothing read before may be served again
}

const ContractCache::Entry *ContractCache::find(const std::string &contract, Clock::time_point now) {
  auto it = entries_.find(contract);
  if (it != entries_.end() && now - it->second.readAt < ttl_) {
    ++hits_;
    return &it->second;
  }
  if (it != entries_.end())
    entries_.erase(it);
  ++misses_;
  return nullptr;
}

void ContractCache::put(const std::string &contract, Entry entry) {
  if (ttl_.count() > 0)
    entries_[contract] = std::move(entry);
}

} // namespace msc::cluster
