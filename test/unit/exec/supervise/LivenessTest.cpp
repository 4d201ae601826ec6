// Worker liveness in virtual time over a modelled beat source: hung at exactly heartbeat x misses
// after the last beat, never before the first beat, the exit grace for a rank that said it is
// finishing and for one the kernel is still tearing down.
#include "executor/supervise/Liveness.h"

#include <gtest/gtest.h>

#include <vector>

using namespace msc::exec;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kBudget = 600 * kMs; // 3 heartbeats of 200 ms

struct Ranks final : BeatSource {
  struct Rank {
    bool running = true;
    uint64_t beats = 0;
    bool finishing = false, exiting = false;
  };
  std::vector<Rank> pages;
  mutable unsigned exitingAsked = 0;
  explicit Ranks(unsigned n) : pages(n) {}
  unsigned ranks() const override { return unsigned(pages.size()); }
  std::optional<uint64_t> beats(unsigned r) const override {
    return pages[r].running ? std::optional<uint64_t>(pages[r].beats) : std::nullopt;
  }
  bool finishing(unsigned r) const override { return pages[r].finishing; }
  bool exiting(unsigned r) const override {
    ++exitingAsked;
    return pages[r].exiting;
  }
};

// One rank that beat once, at 0 (as `finishing` says).
struct OneBeat {
  Ranks ranks{1};
  Liveness live;
  explicit OneBeat(bool finishing = false) {
    live.restart(1, 0);
    ranks.pages[0].beats = 1;
    ranks.pages[0].finishing = finishing;
    live.observe(ranks, 0);
  }
};

} // namespace

TEST(Liveness, HungAtExactlyHeartbeatTimesMissesAfterTheLastBeat) {
  Ranks ranks(1);
  Liveness live;
  live.restart(1, 0);
  ranks.pages[0].beats = 1;
  EXPECT_TRUE(live.observe(ranks, 100 * kMs));
  EXPECT_FALSE(live.observe(ranks, 150 * kMs)) << "no new beat";
  EXPECT_FALSE(live.hung(ranks, 100 * kMs + kBudget - 1, kBudget));
  std::optional<Liveness::Hang> hang = live.hung(ranks, 100 * kMs + kBudget, kBudget);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->rank, 0u);
  EXPECT_EQ(hang->lastBeatNs, 100 * kMs);
  EXPECT_TRUE(live.everBeat());
}

TEST(Liveness, SilenceBeforeTheFirstBeatIsStartUp) {
  Ranks ranks(2);
  Liveness live;
  live.restart(2, 0);
  for (uint64_t t = 0; t < 3'600'000 * kMs; t += 20 * kMs) // an hour of start-up, sampled as the supervisor does
    live.observe(ranks, t);
  EXPECT_FALSE(live.hung(ranks, 3'600'000 * kMs, kBudget));
  EXPECT_FALSE(live.everBeat());
}

// A rank stuck before its first beat (at a rendezvous the others wait in, or starting up) is hung
// once the plan's start_within has passed since its attempt began; without one it is start-up.
TEST(Liveness, ARankThatNeverBeatsIsHungOncePastStartWithin) {
  constexpr uint64_t kStartWithin = 30'000 * kMs;
  Ranks ranks(2);
  Liveness live;
  live.restart(2, 5 * kMs);
  for (uint64_t t = 20 * kMs; t < kStartWithin + 5 * kMs; t += 20 * kMs) { // rank 0 trains, rank 1 never beats
    ++ranks.pages[0].beats;
    live.observe(ranks, t);
  }
  EXPECT_FALSE(live.hung(ranks, kStartWithin + 5 * kMs - 1, kBudget, kStartWithin));
  std::optional<Liveness::Hang> hang = live.hung(ranks, kStartWithin + 5 * kMs, kBudget, kStartWithin);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->rank, 1u);
  EXPECT_TRUE(hang->neverBeat);
  EXPECT_EQ(hang->lastBeatNs, 5 * kMs) << "silent since its attempt began";
  EXPECT_FALSE(live.hung(ranks, 3'600'000 * kMs, 3'600'000 * kMs)) << "without start_within, start-up is not bounded";
  ranks.pages[1].running = false;
  EXPECT_FALSE(live.hung(ranks, 3'600'000 * kMs, 3'600'000 * kMs, kStartWithin)) << "a rank that ended is not hung";
}

TEST(Liveness, TheFirstSilentRankInRankOrderAndARestartForgetsTheBeats) {
  Ranks ranks(3);
  Liveness live;
  live.restart(3, 0);
  ranks.pages[1].beats = 5;
  ranks.pages[2].beats = 5;
  live.observe(ranks, 10 * kMs);
  ranks.pages[1].beats = 6;
  live.observe(ranks, 300 * kMs);
  std::optional<Liveness::Hang> hang = live.hung(ranks, 10 * kMs + kBudget, kBudget);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->rank, 2u); // rank 0 never beat; rank 1 beat later
  live.restart(3, 700 * kMs);
  ranks.pages = std::vector<Ranks::Rank>(3); // a new attempt's pages start at 0 beats
  EXPECT_FALSE(live.hung(ranks, 5000 * kMs, kBudget));
  EXPECT_TRUE(live.everBeat()) << "some attempt of the contract used its page";
}

TEST(Liveness, ARankThatEndedIsNotHung) {
  OneBeat one;
  one.ranks.pages[0].running = false;
  EXPECT_FALSE(one.live.hung(one.ranks, 10 * kBudget, kBudget));
}

TEST(Liveness, AFinishingRankHasTheExitGrace) {
  OneBeat one(/*finishing=*/true);
  EXPECT_FALSE(one.live.hung(one.ranks, kExitGraceNs - 1, kBudget));
  EXPECT_TRUE(one.live.hung(one.ranks, kExitGraceNs, kBudget));
}

TEST(Liveness, ARankTheKernelTearsDownIsACrashOnItsWayNotAHang) {
  OneBeat one;
  Ranks &ranks = one.ranks;
  Liveness &live = one.live;
  EXPECT_FALSE(live.hung(ranks, kBudget - 1, kBudget));
  EXPECT_EQ(ranks.exitingAsked, 0u) << "the kernel is asked only once the budget is spent";
  ranks.pages[0].exiting = true;
  EXPECT_FALSE(live.hung(ranks, kBudget, kBudget));
  EXPECT_FALSE(live.hung(ranks, kExitGraceNs - 1, kBudget));
  EXPECT_TRUE(live.hung(ranks, kExitGraceNs, kBudget)) << "never reaped within the grace: a hang after all";
}

TEST(Liveness, SilentTooLongIsTheOneRule) {
  auto no = [] { return false; };
  auto yes = [] { return true; };
  EXPECT_FALSE(silentTooLong(kBudget - 1, kBudget, false, no));
  EXPECT_TRUE(silentTooLong(kBudget, kBudget, false, no));
  EXPECT_FALSE(silentTooLong(kBudget, kBudget, false, yes));
  EXPECT_FALSE(silentTooLong(kBudget, kBudget, true, no));
  EXPECT_TRUE(silentTooLong(kExitGraceNs, kBudget, true, yes));
  EXPECT_TRUE(silentTooLong(2 * kExitGraceNs, 2 * kExitGraceNs, true, no)) << "a budget past the grace is the limit";
  EXPECT_FALSE(silentTooLong(kExitGraceNs, 2 * kExitGraceNs, false, no));
}
