// What the agent publishes of its node's lending (cluster/agent/LendingReporter.h), in virtual time:
// the share of time lendable over each window, and only changes handed on.
#include "cluster/agent/LendingReporter.h"

#include <gtest/gtest.h>

namespace msc::cluster {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSecond = 1000 * kMs;

// An owner lending 4 CPUs at its most, `lendable` of the last `window` ns core-time, read at `atNs`.
exec::LendingOffer offer(uint64_t atNs, uint64_t lendableCoreNs, uint64_t lentCoreNs = 0, unsigned lendableNow = 4) {
  exec::LendingOffer o;
  o.owners = 1;
  o.cpus = 4;
  o.lendableCpus = lendableNow;
  o.lendableCoreNs = lendableCoreNs;
  o.lentCoreNs = lentCoreNs;
  o.atNs = atNs;
  return o;
}

TEST(LendingReporter, PublishesTheShareOfTimeLendableAndOnlyChanges) {
  ManualClock clock(0);
  LendingReporter r({std::chrono::seconds(1), 50}, clock);
  ASSERT_TRUE(r.due());
  // No window yet: what is lendable now stands for the share.
  std::optional<LendingRecord> first = r.sample(offer(0, 0, 0, 3));
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, (LendingRecord{1, 4, 0, 750, 0}));
  EXPECT_FALSE(r.sample(offer(0, 0))) << "not due again within the interval";
  // Over one second, 4 CPUs lendable 60% of the time (a compute phase of 6 steps in 10), 1 lent.
  clock.advance(kSecond);
  std::optional<LendingRecord> second = r.sample(offer(kSecond, 4 * 600 * kMs, kSecond));
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, (LendingRecord{1, 4, 0, 600, 1}));
  // The same rhythm, within the step: nothing to say.
  clock.advance(kSecond);
  EXPECT_FALSE(r.sample(offer(2 * kSecond, 4 * 1230 * kMs, 2 * kSecond)));
  EXPECT_EQ(r.published()->sharePermille, 600u);
  // The rhythm changed (evaluation: 20% lendable): said.
  clock.advance(kSecond);
  std::optional<LendingRecord> slower = r.sample(offer(3 * kSecond, 4 * 1430 * kMs, 3 * kSecond));
  ASSERT_TRUE(slower);
  EXPECT_EQ(slower->sharePermille, 200u);
  // The owner left: said at once, before the interval is over.
  clock.advance(kSecond / 10);
  EXPECT_FALSE(r.due());
  EXPECT_TRUE(r.movesOwners(exec::LendingOffer{}));
  EXPECT_FALSE(r.movesOwners(offer(0, 0)));
  std::optional<LendingRecord> gone = r.sample(exec::LendingOffer{});
  ASSERT_TRUE(gone);
  EXPECT_EQ(*gone, LendingRecord{});
}

TEST(LendingReporter, ALendingStartedAnewStartsItsWindowAnew) {
  ManualClock clock(0);
  LendingReporter r({std::chrono::seconds(1), 50}, clock);
  r.sample(offer(5 * kSecond, 4 * 5 * kSecond));
  clock.advance(kSecond);
  // Counters that went back (a new lending) are no window: the share is what is lendable now.
  std::optional<LendingRecord> again = r.sample(offer(kMs, 0, 0, 1));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->sharePermille, 250u);
}

TEST(LendingReporter, GpuUnitsAndQueuePairsHaveTheirOwnShareAndLentUnits) {
  ManualClock clock(0);
  LendingReporter r({std::chrono::seconds(1), 50}, clock);
  // Besides its CPUs, the owner lends 4 GPU units on one GPU and 3 queue pairs on one port; its
  // all-reduce keeps the queue pairs in more phases than its forward keeps the GPU.
  auto devices = [](exec::LendingOffer o, unsigned gpuNow, unsigned qpNow, uint64_t gpuNs, uint64_t qpNs,
                    unsigned gpuLent = 0, uint64_t gpuLentNs = 0) {
    o.gpuUnits = 4;
    o.rdmaQueuePairs = 3;
    o.lendableUnits = {gpuNow, qpNow};
    o.lendableUnitNs = {gpuNs, qpNs};
    o.lentUnits = {gpuLent, 0};
    o.lentUnitNs = {gpuLentNs, 0};
    return o;
  };
  std::optional<LendingRecord> first = r.sample(devices(offer(0, 0), 2, 0, 0, 0));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->gpuSharePermille, 500u) << "no window yet: 2 of 4 units lendable now";
  EXPECT_EQ(first->rdmaSharePermille, 0u);
  // Over one second: the GPU's 4 units lendable 30% of the time, 2 of them lent throughout; the
  // queue pairs 90% of it; the CPUs 60%.
  clock.advance(kSecond);
  std::optional<LendingRecord> second =
      r.sample(devices(offer(kSecond, 4 * 600 * kMs), 4, 3, 4 * 300 * kMs, 3 * 900 * kMs, 2, 2 * kSecond));
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, (LendingRecord{1, 4, 4, 600, 0, 3, 300, 2, 900, 0}));
  // Only the queue pairs' rhythm moved: that is said too.
  clock.advance(kSecond);
  std::optional<LendingRecord> third = r.sample(
      devices(offer(2 * kSecond, 4 * 1200 * kMs), 4, 3, 4 * 600 * kMs, 3 * 1300 * kMs, 2, 4 * kSecond));
  ASSERT_TRUE(third);
  EXPECT_EQ(third->rdmaSharePermille, 400u);
  EXPECT_EQ(third->gpuSharePermille, 300u);
  // A GPU unit more lent on average is a change; the same rhythm is not.
  clock.advance(kSecond);
  EXPECT_FALSE(r.sample(
      devices(offer(3 * kSecond, 4 * 1800 * kMs), 4, 3, 4 * 900 * kMs, 3 * 1700 * kMs, 2, 6 * kSecond)));
  clock.advance(kSecond);
  std::optional<LendingRecord> more = r.sample(
      devices(offer(4 * kSecond, 4 * 2400 * kMs), 4, 3, 4 * 1200 * kMs, 3 * 2100 * kMs, 3, 9 * kSecond));
  ASSERT_TRUE(more);
  EXPECT_EQ(more->lentGpuUnits, 3u);
}

} // namespace
} // namespace msc::cluster
