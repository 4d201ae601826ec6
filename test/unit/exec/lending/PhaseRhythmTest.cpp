// The rhythm of a job's phases in virtual time: a steady step makes the next entry predictable to
// the step, jitter widens the lead, a phase overdue is expected now, and nothing is predicted from one
// entry.
#include "executor/lending/PhaseRhythm.h"

#include <gtest/gtest.h>

namespace msc::exec::lending {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(PhaseRhythm, ASteadyStepPredictsTheNextEntry) {
  PhaseRhythm r;
  r.entered(2, 1000 * kMs);
  EXPECT_FALSE(r.nextEntry(2, 1001 * kMs)) << "one entry says nothing of the rhythm";
  for (uint64_t step = 1; step <= 20; ++step)
    r.entered(2, (1000 + 100 * step) * kMs);
  EXPECT_EQ(r.entries(2), 21u);
  EXPECT_EQ(r.interval(2), 100 * kMs);
  EXPECT_EQ(*r.nextEntry(2, 3010 * kMs), 3100 * kMs);
  // Steady: the deviation has decayed to almost nothing; the lead is the reclaim plus that.
  EXPECT_LT(r.lead(2, 300'000), 300'000 + 5 * kMs);
  EXPECT_GE(r.lead(2, 300'000), 300'000u);
  EXPECT_FALSE(r.nextEntry(1, 3010 * kMs)) << "another phase learnt nothing";
}

TEST(PhaseRhythm, JitterWidensTheLeadAndAnOverduePhaseIsExpectedNow) {
  PhaseRhythm steady, jittery;
  uint64_t t = 0;
  for (int i = 0; i < 40; ++i) {
    steady.entered(1, i * 100 * kMs);
    t += (i % 2 ? 80 : 120) * kMs;
    jittery.entered(1, t);
  }
  EXPECT_GT(jittery.lead(1, 0), steady.lead(1, 0) + 40 * kMs);
  // 300 ms since the last entry, with a 100 ms rhythm: due now, not in the past.
  EXPECT_EQ(*steady.nextEntry(1, 3900 * kMs + 300 * kMs), 4200 * kMs);
}

TEST(PhaseRhythm, AnIntervalAcrossUnseenEntriesIsNotSampled) {
  PhaseRhythm karn, naive;
  for (int i = 0; i < 20; ++i) {
    karn.entered(1, i * 10 * kMs);
    naive.entered(1, i * 10 * kMs);
  }
  uint64_t steadyLead = karn.lead(1, 0);
  // The node missed entry 20 (and whatever came between): entry 21 arrives 20 ms after the last seen.
  karn.entered(1, 21 * 10 * kMs, /*others=*/true);
  naive.entered(1, 21 * 10 * kMs);
  EXPECT_EQ(karn.interval(1), 10 * kMs);
  EXPECT_EQ(karn.lead(1, 0), steadyLead);
  EXPECT_EQ(*karn.nextEntry(1, 211 * kMs), 220 * kMs) << "the entry still moves the rhythm on";
  EXPECT_GT(naive.lead(1, 0), steadyLead + 2 * kMs) << "sampled, one missed entry inflates the lead";
}

TEST(PhaseRhythm, EntriesOutOfOrderAndPhaseZeroChangeNothing) {
  PhaseRhythm r;
  r.entered(0, 5 * kMs);
  EXPECT_EQ(r.entries(0), 0u);
  r.entered(1, 100 * kMs);
  r.entered(1, 200 * kMs);
  r.entered(1, 150 * kMs); // a stale reading
  EXPECT_EQ(r.interval(1), 100 * kMs);
  EXPECT_EQ(*r.nextEntry(1, 210 * kMs), 300 * kMs);
}

} // namespace
} // namespace msc::exec::lending
