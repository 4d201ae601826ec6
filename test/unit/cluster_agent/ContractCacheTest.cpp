// The node agent's cache of contract lookups (cluster/agent/ContractCache.h): TTL expiry on a clock
// the test moves, forgetting on an assignment change, no caching at TTL 0. No etcd needed.
#include "cluster/agent/ContractCache.h"

#include <gtest/gtest.h>

using namespace msc::cluster;
using namespace std::chrono_literals;

namespace {

ContractCache::Entry entry(const std::string &source, ContractCache::Clock::time_point at) {
  ContractCache::Entry e;
  e.submission.contract = "train";
  e.submission.source = source;
  e.modRevision = 7;
  e.readAt = at;
  return e;
}

} // namespace

TEST(ContractCache, ServesAnEntryUntilItsTtlRunsOut) {
  ContractCache cache;
  cache.setTtl(30s);
  const auto t0 = ContractCache::Clock::time_point{} + 1000s;
  EXPECT_EQ(cache.find("train", t0), nullptr);
  cache.put("train", entry("contract train {}", t0));
  const ContractCache::Entry *hit = cache.find("train", t0 + 29s);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->submission.source, "contract train {}");
  EXPECT_EQ(hit->modRevision, 7);
  EXPECT_EQ(cache.find("train", t0 + 30s), nullptr); // at the TTL: read again
  EXPECT_EQ(cache.size(), 0u);                        // and the stale entry is gone
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 2u);
}

TEST(ContractCache, ForgetDropsOneContract) {
  ContractCache cache;
  cache.setTtl(1min);
  const auto t0 = ContractCache::Clock::time_point{} + 5s;
  cache.put("train", entry("a", t0));
  cache.put("eval", entry("b", t0));
  cache.forget("train");
  EXPECT_EQ(cache.find("train", t0), nullptr);
  EXPECT_NE(cache.find("eval", t0), nullptr);
}

TEST(ContractCache, TtlZeroCachesNothingAndDropsWhatWasCached) {
  ContractCache cache;
  const auto t0 = ContractCache::Clock::time_point{} + 5s;
  cache.put("train", entry("a", t0)); // the default TTL is 0: not kept
  EXPECT_EQ(cache.size(), 0u);
  cache.setTtl(10s);
  cache.put("train", entry("a", t0));
  EXPECT_EQ(cache.size(), 1u);
  cache.setTtl(0s); // caching turned off: nothing read under the old TTL is served again
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find("train", t0), nullptr);
}

TEST(ContractCache, AShorterTtlAppliesToEntriesAlreadyCached) {
  ContractCache cache;
  cache.setTtl(1min);
  const auto t0 = ContractCache::Clock::time_point{} + 5s;
  cache.put("train", entry("a", t0));
  cache.setTtl(2s);
  EXPECT_NE(cache.find("train", t0 + 1s), nullptr);
  EXPECT_EQ(cache.find("train", t0 + 3s), nullptr);
}
