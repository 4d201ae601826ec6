// The restart policy in virtual time: what is never restarted, the budget, and the back-off of
// attempts that fail again and again without progress.
#include "executor/supervise/RestartPolicy.h"

#include <gtest/gtest.h>

using namespace msc::exec;

namespace {

constexpr uint64_t kMs = 1'000'000;

RestartPolicyConfig config(uint32_t maxRestarts = 10) {
  RestartPolicyConfig c;
  c.recoverable = true;
  c.maxRestarts = maxRestarts;
  c.backoffBaseNs = 200 * kMs;
  c.backoffMaxNs = 1'000 * kMs;
  c.stableAfterNs = 60'000 * kMs;
  return c;
}

} // namespace

TEST(RestartPolicy, APlanWithoutARecoveryPointIsNeverRestarted) {
  RestartPolicyConfig c = config();
  c.recoverable = false;
  RestartPolicy policy(c);
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs).verdict, RestartVerdict::NoRecoveryPoint);
  EXPECT_EQ(policy.restarts(), 0u);
  EXPECT_FALSE(policy.budgetLeft());
}

TEST(RestartPolicy, AFullDiskIsNeverRestartedAndCostsNoBudget) {
  RestartPolicy policy(config());
  EXPECT_EQ(policy.onFault(FaultClass::DiskFull, true, 0, kMs).verdict, RestartVerdict::DiskFull);
  EXPECT_EQ(policy.restarts(), 0u);
}

TEST(RestartPolicy, TheBudgetIsSpentAfterMaxRestarts) {
  RestartPolicy policy(config(2));
  uint64_t now = 0;
  for (uint32_t n = 1; n <= 2; ++n) {
    EXPECT_TRUE(policy.budgetLeft());
    RestartDecision d = policy.onFault(FaultClass::WorkerHung, true, now, now + 10 * kMs);
    ASSERT_TRUE(d.restarts());
    EXPECT_EQ(d.restart, n);
    now += 20 * kMs;
  }
  EXPECT_FALSE(policy.budgetLeft());
  EXPECT_EQ(policy.onFault(FaultClass::GpuLost, true, now, now).verdict, RestartVerdict::BudgetSpent);
  EXPECT_EQ(policy.restarts(), 2u);
}

TEST(RestartPolicy, AnAttemptThatProgressedRestartsAtOnce) {
  RestartPolicy policy(config());
  for (int i = 0; i < 5; ++i) {
    RestartDecision d = policy.onFault(FaultClass::WorkerCrashed, /*steppedOn=*/true, 0, 5 * kMs);
    EXPECT_EQ(d.delayNs, 0u);
    EXPECT_EQ(d.notBeforeNs, 5 * kMs);
  }
}

TEST(RestartPolicy, FailuresWithoutProgressBackOffDoublingUpToTheMaximum) {
  RestartPolicy policy(config());
  std::vector<uint64_t> delays;
  uint64_t now = 1'000 * kMs;
  for (int i = 0; i < 6; ++i) {
    RestartDecision d = policy.onFault(FaultClass::WorkerCrashed, false, now, now + kMs);
    delays.push_back(d.delayNs / kMs);
    EXPECT_EQ(d.notBeforeNs, now + kMs + d.delayNs);
    now = d.notBeforeNs;
  }
  EXPECT_EQ(delays, (std::vector<uint64_t>{0, 200, 400, 800, 1000, 1000}));
  EXPECT_EQ(policy.failuresWithoutProgress(), 6u);
  // Progress resets the back-off: the next failure without progress is again the first.
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, true, now, now).delayNs, 0u);
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, false, now, now).delayNs, 0u);
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, false, now, now).delayNs, 200 * kMs);
}

TEST(RestartPolicy, AnAttemptThatRanLongEnoughCountsAsProgressWithoutSteps) {
  RestartPolicy policy(config());
  policy.onFault(FaultClass::WorkerCrashed, false, 0, kMs);
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, false, 0, 60'000 * kMs - 1).delayNs, 200 * kMs);
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, false, 0, 60'000 * kMs).delayNs, 0u)
      << "a worker without a control page says no step: a minute of running is progress";
}

TEST(RestartPolicy, TheSameStepFailingAgainAndAgainIsACrashLoopEvenWithProgressBeforeIt) {
  RestartPolicy policy(config());
  // Each attempt resumes from step 20 and steps on (progress) to 30, where it fails.
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30).restarts());
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerHung, true, 0, kMs, 30).restarts()) << "a hang there counts too";
  RestartDecision d = policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30);
  EXPECT_EQ(d.verdict, RestartVerdict::CrashLoop);
  EXPECT_EQ(d.loopStep, 30u);
  EXPECT_EQ(d.loopFailures, 3u);
  EXPECT_EQ(policy.restarts(), 2u) << "the loop costs no restart";
}

TEST(RestartPolicy, GettingPastTheStepBreaksTheLoopAndDeviceFaultsNeitherCountNorBreakIt) {
  RestartPolicy policy(config());
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30).restarts());
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 28).restarts()) << "no further: 2 in a row";
  EXPECT_TRUE(policy.onFault(FaultClass::GpuLost, true, 0, kMs, 30).restarts()) << "the node's fault, not the step's";
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 31).restarts()) << "past 30: a new run";
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 31).restarts());
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, false, 0, kMs).restarts()) << "no step reported: not counted";
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 31).verdict, RestartVerdict::CrashLoop);
}

// A rank of a multi-rank job whose peer restarted loses its collective at the peer's step, again
// and again while the peer crash-loops: that is the peer's loop, not this rank's.
TEST(RestartPolicy, ALostPeerNeitherCountsTowardACrashLoopNorBreaksOne) {
  RestartPolicy policy(config());
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(policy.onFault(FaultClass::PeerLost, true, 0, kMs, 30).restarts()) << "loss " << i;
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30).restarts());
  EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30).restarts());
  EXPECT_TRUE(policy.onFault(FaultClass::PeerLost, true, 0, kMs, 31).restarts()) << "past the step, but not this rank's doing";
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30).verdict, RestartVerdict::CrashLoop);
  EXPECT_EQ(policy.restarts(), 8u) << "each loss is a restart all the same";
}

TEST(RestartPolicy, ACrashLoopCheckOfZeroLeavesItToTheBudget) {
  RestartPolicyConfig c = config(4);
  c.crashLoopAfter = 0;
  RestartPolicy policy(c);
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30).restarts());
  EXPECT_EQ(policy.onFault(FaultClass::WorkerCrashed, true, 0, kMs, 30).verdict, RestartVerdict::BudgetSpent);
}
