// What the node lends, decided in virtual time: nothing before the demand curve starts; a phase lends
// what it does not keep; the lead takes CPUs back before the phase that keeps them, learnt (auto) or
// fixed; step schedules and wall-time windows; borrowers keep what they have; the wake mask.
#include "executor/lending/LoanPlanner.h"

#include <gtest/gtest.h>

namespace msc::exec::lending {
namespace {

constexpr uint64_t kMs = 1'000'000;

// An owner on CPUs 2..7: decode keeps the loader's 2,3; compute the trainer's 4,5; 6,7 are the
// rdma proxy's, kept by none; eval (every 100 steps for 10) keeps 4,5; snapshot (the 10th minute)
// keeps nothing.
Owner trainer() {
  Owner o;
  o.contract = "train";
  o.cpus = {2, 3, 4, 5, 6, 7};
  o.phases = {{"decode", {2, 3}}, {"compute", {4, 5}},
              {"eval", {4, 5}, PhaseSpec::Trigger::Steps, 100, 10},
              {"snapshot", {}, PhaseSpec::Trigger::WallTime, 0, 0, 600'000 * kMs, 601'000 * kMs}};
  o.reclaimCostNs = kMs / 2;
  return o;
}

TEST(LoanPlanner, NothingIsLentBeforeTheFirstPhaseOrBetweenPhases) {
  Owner o = trainer();
  o.step = 55; // no step phase active
  Decision d = decide({o}, {{"prep", 4, {}}}, 1000 * kMs);
  EXPECT_TRUE(d.borrowerCpus.at("prep").empty());
  EXPECT_EQ(d.kept.at("train"), (CpuSet{2, 3, 4, 5, 6, 7}));
}

TEST(LoanPlanner, APhaseLendsWhatItDoesNotKeep) {
  Owner o = trainer();
  o.step = 55;
  o.workerPhase = 1; // decode: 2,3 kept; no rhythm yet, so compute's 4,5 are lent until it comes
  Decision d = decide({o}, {{"prep", 8, {}}}, 1000 * kMs);
  EXPECT_EQ(d.borrowerCpus.at("prep"), (CpuSet{4, 5, 6, 7}));
  EXPECT_EQ(d.lent.at("train"), (CpuSet{4, 5, 6, 7}));
  EXPECT_EQ(d.wakeMask.at("train"), 0b0110u) << "compute and eval keep lent CPUs: their entry wakes the node";
  o.workerPhase = 2;
  d = decide({o}, {{"prep", 8, {4, 5, 6, 7}}}, 1001 * kMs);
  EXPECT_EQ(d.borrowerCpus.at("prep"), (CpuSet{2, 3, 6, 7})) << "compute takes 4,5 back, decode's 2,3 are lent";
}

TEST(LoanPlanner, LeadAutoTakesCpusBackBeforeThePhaseThatKeepsThem) {
  Owner o = trainer();
  o.step = 55;
  PhaseRhythm rhythm;
  // A 100 ms step: decode at t, compute at t + 30 ms.
  for (uint64_t s = 0; s < 30; ++s) {
    rhythm.entered(1, s * 100 * kMs);
    rhythm.entered(2, s * 100 * kMs + 30 * kMs);
  }
  o.rhythm = &rhythm;
  o.workerPhase = 1;
  uint64_t decodeAt = 30 * 100 * kMs; // the 31st step's decode
  rhythm.entered(1, decodeAt);
  // Early in decode: compute is 30 ms away, far beyond its lead: 4,5 are lent.
  Decision d = decide({o}, {{"prep", 8, {}}}, decodeAt + 1 * kMs);
  EXPECT_EQ(d.borrowerCpus.at("prep"), (CpuSet{4, 5, 6, 7}));
  // Within compute's lead (the reclaim's 0.5 ms plus a steady rhythm's few): taken back while still
  // in decode, so that compute is entered with its CPUs home.
  d = decide({o}, {{"prep", 8, {4, 5, 6, 7}}}, decodeAt + 29 * kMs + 600'000);
  EXPECT_EQ(d.borrowerCpus.at("prep"), (CpuSet{6, 7}));
  EXPECT_EQ(d.kept.at("train"), (CpuSet{2, 3, 4, 5}));
  EXPECT_EQ(d.wakeMask.at("train"), 0u) << "nothing a phase keeps is lent: no entry needs to wake the node";
}

TEST(LoanPlanner, AFixedLeadIsThatTimeAhead) {
  Owner o = trainer();
  o.step = 55;
  PhaseRhythm rhythm;
  for (uint64_t s = 0; s < 10; ++s)
    rhythm.entered(2, s * 100 * kMs);
  o.rhythm = &rhythm;
  o.workerPhase = 1;
  o.leadAuto = false;
  o.leadNs = 10 * kMs;
  EXPECT_EQ(decide({o}, {{"prep", 8, {}}}, 985 * kMs).borrowerCpus.at("prep"), (CpuSet{4, 5, 6, 7}));
  EXPECT_EQ(decide({o}, {{"prep", 8, {}}}, 991 * kMs).borrowerCpus.at("prep"), (CpuSet{6, 7}));
}

// IO follows the same rules as CPUs: a device whose role's `io` a phase keeps is throttled for the
// borrowers while that phase is active or due within the lead, and every device outside phases.
TEST(LoanPlanner, ADeviceIsThrottledWhileAPhaseKeepsItsIoOrSoonWill) {
  Owner o = trainer();
  o.ioDevices = {"nvme0n1", "nvme1n1"};
  o.phases[0].keptDevices = {"nvme0n1"}; // decode keeps the loader's io
  o.leadAuto = false;
  o.leadNs = 2 * kMs;
  EXPECT_EQ(decide({o}, {}, 0).throttledDevices, (std::vector<std::string>{"nvme0n1", "nvme1n1"}))
      << "before the first phase it keeps everything";
  o.workerPhase = 1;
  EXPECT_EQ(decide({o}, {}, 0).throttledDevices, (std::vector<std::string>{"nvme0n1"}));
  o.workerPhase = 2;
  EXPECT_TRUE(decide({o}, {}, 0).throttledDevices.empty()) << "computing, the loader's device is lent";
  PhaseRhythm rhythm; // decode every 10 ms: due at 30 ms
  rhythm.entered(1, 0);
  rhythm.entered(1, 10 * kMs);
  rhythm.entered(1, 20 * kMs);
  o.rhythm = &rhythm;
  EXPECT_TRUE(decide({o}, {}, 25 * kMs).throttledDevices.empty());
  EXPECT_EQ(decide({o}, {}, 29 * kMs).throttledDevices, (std::vector<std::string>{"nvme0n1"}))
      << "within the lead of decode";
}

TEST(LoanPlanner, StepSchedulesAndWallTimeWindowsAreTheNodesOwnTriggers) {
  Owner o = trainer();
  o.workerPhase = 1;
  o.step = 103; // in eval (100..109): 4,5 kept with decode's 2,3
  EXPECT_EQ(decide({o}, {{"prep", 8, {}}}, 10 * kMs).borrowerCpus.at("prep"), (CpuSet{6, 7}));
  o.step = 3; // the job's first steps are no window of every(100 steps, for = 10)
  EXPECT_EQ(activePhases(o, 10 * kMs), (std::vector<unsigned>{1}));
  o.workerPhase = 0;
  EXPECT_TRUE(decide({o}, {{"prep", 8, {}}}, 10 * kMs).borrowerCpus.at("prep").empty())
      << "before the worker's first phase the owner keeps everything, step schedule or not";
  o.workerPhase = 1;
  o.step = 150;
  o.nsPerStep = 10 * kMs; // eval is 50 steps = 500 ms away: lent
  EXPECT_EQ(decide({o}, {{"prep", 8, {}}}, 10 * kMs).borrowerCpus.at("prep"), (CpuSet{4, 5, 6, 7}));
  // One step from eval: 10 ms away, beyond its lead (the reclaim's 0.5 ms and a quarter step).
  o.step = 199;
  EXPECT_EQ(decide({o}, {{"prep", 8, {}}}, 10 * kMs).borrowerCpus.at("prep"), (CpuSet{4, 5, 6, 7}));
  // With a 0.5 ms step the next step is within 0.5 + 0.125 ms: taken back ahead.
  o.nsPerStep = kMs / 2;
  EXPECT_EQ(decide({o}, {{"prep", 8, {}}}, 10 * kMs).borrowerCpus.at("prep"), (CpuSet{6, 7}));
  // The snapshot window (600 s..601 s into the job) keeps nothing: with the worker between phases the
  // window alone is active, and everything is lent.
  o.workerPhase = 0;
  o.step = 150;
  o.startedNs = 1000 * kMs;
  EXPECT_TRUE(decide({o}, {{"prep", 8, {}}}, 1000 * kMs + 599'000 * kMs).borrowerCpus.at("prep").empty());
  EXPECT_EQ(decide({o}, {{"prep", 8, {}}}, 1000 * kMs + 600'500 * kMs).borrowerCpus.at("prep"),
            (CpuSet{2, 3, 4, 5, 6, 7}));
}

TEST(LoanPlanner, BorrowersKeepWhatTheyHaveInAdmissionOrder) {
  Owner o = trainer();
  o.step = 55;
  o.workerPhase = 1;
  Decision d = decide({o}, {{"a", 2, {6, 7}}, {"b", 3, {}}}, kMs);
  EXPECT_EQ(d.borrowerCpus.at("a"), (CpuSet{6, 7}));
  EXPECT_EQ(d.borrowerCpus.at("b"), (CpuSet{4, 5}));
  // Two owners lend into one pool; each CPU lent is its owner's.
  Owner other = trainer();
  other.contract = "other";
  other.cpus = {10, 11};
  other.phases = {{"only", {}}};
  other.workerPhase = 1;
  d = decide({o, other}, {{"a", 8, {}}}, kMs);
  EXPECT_EQ(d.borrowerCpus.at("a"), (CpuSet{4, 5, 6, 7, 10, 11}));
  EXPECT_EQ(d.lent.at("other"), (CpuSet{10, 11}));
}

TEST(LoanPlanner, TheNextDecisionIsWhenALeadStartsOrAWindowCloses) {
  Owner o = trainer();
  o.step = 55;
  PhaseRhythm rhythm;
  for (uint64_t s = 0; s < 30; ++s) {
    rhythm.entered(1, s * 100 * kMs);
    rhythm.entered(2, s * 100 * kMs + 30 * kMs);
  }
  o.rhythm = &rhythm;
  o.workerPhase = 1;
  uint64_t decodeAt = 30 * 100 * kMs;
  rhythm.entered(1, decodeAt);
  uint64_t now = decodeAt + kMs;
  Decision d = decide({o}, {{"prep", 8, {}}}, now);
  uint64_t computeAt = *rhythm.nextEntry(2, now);
  EXPECT_EQ(nextDecisionNs({o}, d, now), computeAt - leadOf(o, 2)) << "compute's lead starts the next reclaim";
  // Deciding at that instant takes 4,5 back; nothing lent is kept by a phase soon after.
  uint64_t then = computeAt - leadOf(o, 2);
  Decision back = decide({o}, {{"prep", 8, d.borrowerCpus.at("prep")}}, then);
  EXPECT_EQ(back.borrowerCpus.at("prep"), (CpuSet{6, 7}));
  EXPECT_EQ(nextDecisionNs({o}, back, then), UINT64_MAX) << "6,7 are kept by no phase: only an entry changes it";
  // In eval (a step window the node opened), its end is due: 10 steps of 10 ms from its start.
  o.step = 100;
  o.nsPerStep = 10 * kMs;
  d = decide({o}, {{"prep", 8, {}}}, now);
  EXPECT_EQ(nextDecisionNs({o}, d, now), now + 10 * 10 * kMs);
  // Before the demand curve starts nothing is lent, and time alone changes nothing.
  Owner idle = trainer();
  idle.step = 55;
  EXPECT_EQ(nextDecisionNs({idle}, decide({idle}, {{"prep", 8, {}}}, now), now), UINT64_MAX);
}

// GPU units: the trainer's two GPU slices (4 units each on GPU 0 and GPU 1), kept by compute only.
Owner gpuTrainer() {
  Owner o = trainer();
  o.gpuShares = {{"trainer0", 0, "0000:17:00.0", 4, 16}, {"trainer1", 1, "0000:65:00.0", 4, 16}};
  o.phases[1].keptShares[kGpuShare] = {0, 1}; // compute
  return o;
}
Borrower gpuBorrower(const std::string &name, unsigned cpus, unsigned units, ShareLoan current = {}) {
  Borrower b{name, cpus, {}};
  b.units[kGpuShare] = units;
  b.currentShares[kGpuShare] = std::move(current);
  return b;
}

TEST(LoanPlanner, GpuUnitsAreLentOnOneGpuInPhasesThatDoNotKeepThem) {
  Owner o = gpuTrainer();
  o.step = 55;
  Decision before = decide({o}, {gpuBorrower("infer", 1, 3)}, 1000 * kMs);
  EXPECT_TRUE(before.borrowerShares[kGpuShare].at("infer").empty()) << "before the first phase everything is kept";
  EXPECT_EQ(before.sharesKeptNow[kGpuShare].at("train"), (std::vector<unsigned>{0, 1}));

  o.workerPhase = 1; // decode keeps no GPU
  Decision d = decide({o}, {gpuBorrower("infer", 1, 3), gpuBorrower("eval", 1, 3)}, 1000 * kMs);
  EXPECT_EQ(d.borrowerShares[kGpuShare].at("infer"), (ShareLoan{"train", 0, 3}));
  EXPECT_EQ(d.borrowerShares[kGpuShare].at("eval"), (ShareLoan{"train", 1, 3})) << "one unit left on GPU 0 is not enough: all on one GPU";
  EXPECT_TRUE(d.wakeMask.at("train") & 2u) << "compute keeps lent GPU units: its entry wakes the node";
  EXPECT_TRUE(sharesLentFrom(d, kGpuShare, "train", {0}));

  o.workerPhase = 2; // compute keeps both
  Decision c = decide({o}, {gpuBorrower("infer", 1, 3, {"train", 0, 3})}, 1000 * kMs);
  EXPECT_TRUE(c.borrowerShares[kGpuShare].at("infer").empty());
  EXPECT_EQ(c.sharesKeptNow[kGpuShare].at("train"), (std::vector<unsigned>{0, 1}));
}

TEST(LoanPlanner, ABorrowerKeepsItsGpuShareAndOneWithoutCpusGetsNone) {
  Owner o = gpuTrainer();
  o.step = 55;
  o.workerPhase = 1;
  Decision d = decide({o}, {gpuBorrower("first", 1, 2), gpuBorrower("second", 1, 2, {"train", 1, 2})}, 1000 * kMs);
  EXPECT_EQ(d.borrowerShares[kGpuShare].at("second"), (ShareLoan{"train", 1, 2})) << "kept where it is";
  EXPECT_EQ(d.borrowerShares[kGpuShare].at("first"), (ShareLoan{"train", 0, 2}));
  // Four lent CPUs (4..7) for a borrower of 4 and one of 1: the second is frozen, so lent no GPU.
  Decision frozen = decide({o}, {gpuBorrower("big", 4, 0), gpuBorrower("small", 1, 2)}, 1000 * kMs);
  EXPECT_TRUE(frozen.borrowerCpus.at("small").empty());
  EXPECT_TRUE(frozen.borrowerShares[kGpuShare].at("small").empty());
  Decision gpuOnly = decide({o}, {gpuBorrower("big", 4, 0), gpuBorrower("gpuonly", 0, 2)}, 1000 * kMs);
  EXPECT_EQ(gpuOnly.borrowerShares[kGpuShare].at("gpuonly"), (ShareLoan{"train", 0, 2})) << "it asks for no CPU";
}

TEST(LoanPlanner, GpuUnitsComeBackAheadOfThePhaseThatKeepsThem) {
  Owner o = gpuTrainer();
  o.step = 55;
  o.workerPhase = 1;
  o.leadAuto = false;
  o.leadNs = 5 * kMs;
  PhaseRhythm rhythm;
  for (uint64_t t = 0; t < 10; ++t) { // decode at 0, compute at 10 ms, every 20 ms
    rhythm.entered(1, 1000 * kMs + t * 20 * kMs, false);
    rhythm.entered(2, 1010 * kMs + t * 20 * kMs, false);
  }
  o.rhythm = &rhythm;
  uint64_t decodeAt = 1000 * kMs + 10 * 20 * kMs;
  Decision early = decide({o}, {gpuBorrower("infer", 1, 2)}, decodeAt + kMs);
  EXPECT_FALSE(early.borrowerShares[kGpuShare].at("infer").empty());
  uint64_t next = nextDecisionNs({o}, early, decodeAt + kMs);
  EXPECT_LE(next, decodeAt + 5 * kMs) << "the lead's reclaim of lent GPU units is due";
  Decision late = decide({o}, {gpuBorrower("infer", 1, 2, early.borrowerShares[kGpuShare].at("infer"))}, decodeAt + 6 * kMs);
  EXPECT_TRUE(late.borrowerShares[kGpuShare].at("infer").empty()) << "compute is expected within the lead";
}

// RDMA queue pairs: the trainer's two groups (3 of 4 queue pairs lendable each, one per HCA port),
// kept by compute only, lent as GPU units are and beside them.
Owner rdmaTrainer() {
  Owner o = gpuTrainer();
  o.rdmaShares = {{"trainer0", "mlx5_0", 1, 3}, {"trainer1", "mlx5_1", 1, 3}};
  o.phases[1].keptShares[kRdmaShare] = {0, 1}; // compute
  return o;
}

TEST(LoanPlanner, QueuePairsAreLentOnOnePortBesideGpuUnitsAndComeBackWhenComputeKeepsThem) {
  Owner o = rdmaTrainer();
  o.step = 55;
  Borrower both = gpuBorrower("infer", 1, 2);
  both.units[kRdmaShare] = 2;
  Borrower qpsOnly{"prep", 1, {}};
  qpsOnly.units[kRdmaShare] = 2;
  Decision before = decide({o}, {both, qpsOnly}, 1000 * kMs);
  EXPECT_TRUE(before.borrowerShares[kRdmaShare].at("infer").empty()) << "before the first phase everything is kept";
  EXPECT_EQ(before.sharesKeptNow[kRdmaShare].at("train"), (std::vector<unsigned>{0, 1}));

  o.workerPhase = 1; // decode keeps no queue pair
  Decision d = decide({o}, {both, qpsOnly}, 1000 * kMs);
  EXPECT_EQ(d.borrowerShares[kGpuShare].at("infer"), (ShareLoan{"train", 0, 2}));
  EXPECT_EQ(d.borrowerShares[kRdmaShare].at("infer"), (ShareLoan{"train", 0, 2}));
  EXPECT_EQ(d.borrowerShares[kRdmaShare].at("prep"), (ShareLoan{"train", 1, 2}))
      << "one queue pair left on mlx5_0 is not enough: all on one port";
  EXPECT_FALSE(d.borrowerShares[kGpuShare].count("prep")) << "it asks for no GPU unit";
  EXPECT_TRUE(d.wakeMask.at("train") & 2u) << "compute keeps lent queue pairs: its entry wakes the node";
  EXPECT_TRUE(sharesLentFrom(d, kRdmaShare, "train", {1}));

  Borrower greedy{"greedy", 1, {}};
  greedy.units[kRdmaShare] = 4;
  EXPECT_TRUE(decide({o}, {greedy}, 1000 * kMs).borrowerShares[kRdmaShare].at("greedy").empty())
      << "a group keeps one of its four queue pairs";

  o.workerPhase = 2; // compute keeps them
  both.currentShares[kRdmaShare] = {"train", 0, 2};
  Decision c = decide({o}, {both}, 1000 * kMs);
  EXPECT_TRUE(c.borrowerShares[kRdmaShare].at("infer").empty());
  EXPECT_FALSE(sharesLentFrom(c, "train", o.phases[1]));
}

} // namespace
} // namespace msc::exec::lending
