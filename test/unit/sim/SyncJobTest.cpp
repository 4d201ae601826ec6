// The synchronous whole-cluster job against arithmetic it must agree with: its time adds up, its
// ETTR over 30 seeds holds the closed form of a renewal process, spares and repair, hang detection
// and the restart policy's back-off each cost what they should.
#include "sim/Estimate.h"
#include "sim/SyncJob.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace msc::sim;

namespace {
constexpr uint64_t kMinNs = 60'000'000'000ull;
constexpr uint64_t kHourNs = 60 * kMinNs;
constexpr uint64_t kDayNs = 24 * kHourNs;
const ClusterShape kLlama3{2048, 8};

double partsOf(const SyncJobRun &r) {
  return r.training + r.replayed + r.snapshots + r.detection + r.waitingForNode + r.replacement + r.restart;
}

SyncJobCosts noBackoff(SyncJobCosts c) {
  c.policy.backoffBaseNs = 0;
  c.policy.backoffMaxNs = 0;
  return c;
}

// One cause of the job's own (no node taken out) at `perHour`, of class `c`.
FaultModel oneCause(double perHour, msc::exec::FaultClass c = msc::exec::FaultClass::WorkerCrashed) {
  return FaultModel({FaultCause{"Test", "test", Scope::Job, c, perHour, "the test"}}, kLlama3);
}
} // namespace

TEST(SyncJob, WhereTheTimeWentAddsUp) {
  FaultModel model(faultCauses(RateTable::Llama3), kLlama3);
  SyncJobCosts c;
  c.snapshotEveryNs = 30 * kMinNs;
  c.snapshotStallNs = kMinNs;
  c.crashDetectNs = kMinNs;
  c.hangDetectNs = 10 * kMinNs;
  c.restartNs = 8 * kMinNs;
  c.replaceNodeNs = 2 * kMinNs;
  c.repairNs = 2 * kDayNs;
  c.spareNodes = 1;
  SyncJobRun r = runSyncJob(model, c, 54 * kDayNs, 1);
  EXPECT_NEAR(r.hours, 54 * 24, 1e-9);
  EXPECT_NEAR(partsOf(r), r.hours, 1e-6);
  EXPECT_GT(r.interruptions, 350u);
  for (double part : {r.training, r.replayed, r.snapshots, r.detection, r.waitingForNode, r.replacement, r.restart})
    EXPECT_GT(part, 0);
}

// Faults at rate l, training time T between snapshots (taken in the background), every
// interruption costing D before the job trains again (a fault during it starts it over): by the
// renewal-reward theorem ETTR = (lT / (e^lT - 1)) e^-lD. Llama 3's rate, T = 30 min, D = 10 min: 0.873.
TEST(SyncJob, ThirtySeedsHoldTheClosedFormOfARenewalProcess) {
  const double perHour = 419.0 / (54 * 24);
  FaultModel model = oneCause(perHour);
  SyncJobCosts c;
  c.snapshotEveryNs = 30 * kMinNs;
  c.crashDetectNs = kMinNs;
  c.restartNs = 9 * kMinNs;
  c = noBackoff(c);
  std::vector<double> ettr;
  for (uint64_t seed = 1; seed <= 30; ++seed)
    ettr.push_back(runSyncJob(model, c, 54 * kDayNs, seed).ettr());
  Estimate e = estimate(ettr);
  double lT = perHour * 0.5, lD = perHour * 10.0 / 60;
  double expected = lT / std::expm1(lT) * std::exp(-lD);
  EXPECT_NEAR(expected, 0.873, 0.001);
  EXPECT_LE(e.low(), expected) << formatEstimate(e);
  EXPECT_GE(e.high(), expected) << formatEstimate(e);
  EXPECT_LT(e.halfWidth, 0.01);
}

TEST(SyncJob, WithoutASpareTheJobWaitsForTheRepair) {
  FaultModel model = oneCause(0.1, msc::exec::FaultClass::GpuLost);
  SyncJobCosts c;
  c.snapshotEveryNs = 30 * kMinNs;
  c.restartNs = 5 * kMinNs;
  c.repairNs = 6 * kHourNs;
  c.replaceNodeNs = kMinNs;
  c = noBackoff(c);
  SyncJobRun none = runSyncJob(model, c, 30 * kDayNs, 3);
  c.spareNodes = 4;
  SyncJobRun spares = runSyncJob(model, c, 30 * kDayNs, 3);
  EXPECT_EQ(none.interruptions, spares.interruptions) << "the same faults";
  // Without a spare, each loss waits for the first node back: at most its own repair (6 h), less
  // when another lost node was already under repair; with a loss every 10 h, most of the 6 h.
  EXPECT_LE(none.waitingForNode, 6 * double(none.interruptions) + 1e-9);
  EXPECT_GT(none.waitingForNode, 0.5 * 6 * double(none.interruptions));
  EXPECT_LT(spares.waitingForNode, none.waitingForNode / 10) << "4 spares, 6 h repairs, a loss every 10 h";
  EXPECT_GT(spares.ettr(), none.ettr() + 0.2);
  EXPECT_NEAR(spares.replacement, double(spares.interruptions) / 60, 0.05) << "a minute each";
}

TEST(SyncJob, AHangIsFoundAfterItsDetectionTimeACrashAfterItsOwn) {
  SyncJobCosts c;
  c.snapshotEveryNs = 30 * kMinNs;
  c.crashDetectNs = kMinNs;
  c.hangDetectNs = 10 * kMinNs;
  c.restartNs = kMinNs;
  c = noBackoff(c);
  SyncJobRun hangs = runSyncJob(oneCause(0.05, msc::exec::FaultClass::WorkerHung), c, 30 * kDayNs, 5);
  SyncJobRun crashes = runSyncJob(oneCause(0.05), c, 30 * kDayNs, 5);
  EXPECT_EQ(hangs.interruptions, crashes.interruptions);
  EXPECT_NEAR(hangs.detection, double(hangs.interruptions) * 10 / 60, 0.01);
  EXPECT_NEAR(crashes.detection, double(crashes.interruptions) / 60, 0.01);
}

// Faults faster than the job recovers: the executor's restart policy backs off (the second failure
// without progress waits its base, then twice that, ... up to its most), which costs time.
TEST(SyncJob, TheRestartPolicyBacksOffWhenFaultsComeFasterThanRecovery) {
  FaultModel model = oneCause(10); // one every 6 minutes: a 2-minute restart is often cut short
  SyncJobCosts c;
  c.snapshotEveryNs = 10 * kMinNs;
  c.crashDetectNs = 1'000'000'000;
  c.restartNs = 2 * kMinNs;
  c.policy.backoffBaseNs = kMinNs; // a slow job's back-off: from a minute, doubling, up to ten
  c.policy.backoffMaxNs = 10 * kMinNs;
  SyncJobRun backingOff = runSyncJob(model, c, 5 * kDayNs, 9);
  SyncJobRun eager = runSyncJob(model, noBackoff(c), 5 * kDayNs, 9);
  EXPECT_NEAR(partsOf(backingOff), 5 * 24, 1e-6);
  EXPECT_EQ(backingOff.interruptions, eager.interruptions);
  EXPECT_GT(backingOff.restart, eager.restart);
  EXPECT_LT(backingOff.ettr(), eager.ettr());
  EXPECT_GT(eager.ettr(), 0.2);
}

TEST(SyncJob, TheSameSeedRunsTheSameJob) {
  FaultModel model(faultCauses(RateTable::Llama3), kLlama3);
  SyncJobCosts c;
  c.snapshotEveryNs = 20 * kMinNs;
  c.crashDetectNs = kMinNs;
  c.restartNs = 5 * kMinNs;
  c.repairNs = kDayNs;
  c.spareNodes = 2;
  SyncJobRun a = runSyncJob(model, c, 20 * kDayNs, 11), b = runSyncJob(model, c, 20 * kDayNs, 11);
  EXPECT_EQ(a.interruptions, b.interruptions);
  EXPECT_EQ(a.training, b.training);
  EXPECT_EQ(a.waitingForNode, b.waitingForNode);
}
