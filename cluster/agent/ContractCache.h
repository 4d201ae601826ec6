// A node agent's cache of contract lookups (ClusterAgent::lookupContract): the submissions it read
// from /mscale/contracts/, each kept for the cluster config's agents.contract_cache_ttl. Readers on
// one node ask their agent rather than etcd (every rank of a job at start, a resize of an assigned
// contract, people), so a node reads a contract from etcd once per TTL, however many ask.
//
// Only what was found is cached: a contract submitted a moment ago is seen at once, not after a
// TTL of "not found". An entry goes early when the node's assignment of that contract changes
// (forget), which is when its submission may have changed. A TTL of 0 caches nothing.
#pragma once

#include "cluster/keys/Keys.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace msc::cluster {

class ContractCache {
public:
  using Clock = std::chrono::steady_clock;

  struct Entry {
    Submission submission;
    int64_t modRevision = 0;   // of /mscale/contracts/<contract> when it was read
    Clock::time_point readAt;
  };

  void setTtl(std::chrono::nanoseconds ttl);
  std::chrono::nanoseconds ttl() const { return ttl_; }

  // The entry while it is younger than the TTL; an older one is dropped.
  const Entry *find(const std::string &contract, Clock::time_point now);
  void put(const std::string &contract, Entry entry);
  void forget(const std::string &contract) { entries_.erase(contract); }

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  size_t size() const { return entries_.size(); }

private:
  std::chrono::nanoseconds ttl_{0};
  std::map<std::string, Entry> entries_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

} // namespace msc::cluster
