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

} // namespace
} // namespace msc::cluster
