// The node's account of reclaims against the bound, in virtual time: an entry whose CPUs were home
// costs nothing, a late reclaim is a miss, a second entry while one is open is measured from the first.
#include "executor/lending/ReclaimLedger.h"

#include <gtest/gtest.h>

namespace msc::exec::lending {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(ReclaimLedger, EntriesAheadCostNothingAndLateReclaimsAreMisses) {
  ReclaimLedger l;
  l.entered("train", 100 * kMs, false, 2 * kMs);
  l.entered("train", 200 * kMs, true, 2 * kMs);
  uint64_t deadline = 0;
  EXPECT_TRUE(l.open("train", &deadline));
  EXPECT_EQ(deadline, 202 * kMs);
  l.entered("train", 201 * kMs, true, 2 * kMs); // still waiting: measured from the first entry
  l.reclaimed("train", 200 * kMs + 300'000);
  l.entered("train", 300 * kMs, true, 2 * kMs);
  l.reclaimed("train", 303 * kMs);
  const ReclaimStats &s = l.stats("train");
  EXPECT_EQ(s.entries, 4u);
  EXPECT_EQ(s.ahead, 1u);
  EXPECT_EQ(s.reclaims, 3u);
  EXPECT_EQ(s.missed, 1u);
  EXPECT_EQ(s.latenciesNs, (std::vector<uint64_t>{0, 300'000, 3 * kMs}));
  EXPECT_EQ(quantile(s.latenciesNs, 0.5), 300'000u);
  EXPECT_EQ(quantile(s.latenciesNs, 0.99), 3 * kMs);
  EXPECT_EQ(quantile({}, 0.5), 0u);
}

// An owner enters phases for weeks: the samples kept are a window of the newest, while the counts,
// the worst and the histogram are of every entry.
TEST(ReclaimLedger, AWindowOfLatenciesIsKeptAndTheHistogramCountsEveryEntry) {
  ReclaimLedger l;
  const size_t n = 3 * ReclaimStats::kLatencyWindow;
  for (size_t i = 0; i < n; ++i) {
    l.entered("train", i * 10 * kMs, true, 2 * kMs);
    l.reclaimed("train", i * 10 * kMs + (i == 7 ? 4 * kMs : 60'000));
  }
  const ReclaimStats &s = l.stats("train");
  EXPECT_EQ(s.reclaims, n);
  EXPECT_EQ(s.missed, 1u);
  EXPECT_LE(s.latenciesNs.size(), 2 * ReclaimStats::kLatencyWindow);
  EXPECT_GE(s.latenciesNs.size(), ReclaimStats::kLatencyWindow);
  EXPECT_EQ(s.latenciesNs.back(), 60'000u);
  EXPECT_EQ(s.worstNs, 4 * kMs) << "the worst stays, though its sample left the window";
  EXPECT_EQ(s.buckets[2], n - 1) << "60 us: in (50 us, 100 us]";
  EXPECT_EQ(s.buckets[7], 1u) << "4 ms: in (2 ms, 5 ms]";
  EXPECT_EQ(s.sumNs, (n - 1) * 60'000 + 4 * kMs);
}

} // namespace
} // namespace msc::exec::lending
