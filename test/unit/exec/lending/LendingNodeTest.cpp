// The reclaim machine on the injected clock, over SimLoans: an owner's worker enters phases on its
// control page exactly as the C ABI does (entry time, entry count, phase number) and the node ticks
// when the tick said or when an entry wakes it. What the tests check is what the borrower held at the
// instant of each entry, read from the mechanism (SimLoans::cpusOf), not the node's own ledger; the
// ledger is checked against it.
#include "executor/lending/LendingNode.h"
#include "executor/lending/SimLoans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>

namespace msc::exec::lending {
namespace {

using mscale::worker::ControlPage;

constexpr uint64_t kUs = 1'000, kMs = 1'000'000;

bool intersects(const CpuSet &a, const CpuSet &b) {
  return std::any_of(a.begin(), a.end(), [&](unsigned c) { return std::binary_search(b.begin(), b.end(), c); });
}

// A trainer on CPUs 0..5: decode keeps the loader's 0,1, compute the trainer's 2,3; 4,5 (its
// proxy) are kept by no phase. The bound is 2 ms.
Owner trainer() {
  Owner o;
  o.contract = "train";
  o.cpus = {0, 1, 2, 3, 4, 5};
  o.phases = {{"decode", {0, 1}}, {"compute", {2, 3}}};
  o.reclaimWithinNs = 2 * kMs;
  return o;
}

// The worker's side of ControlPage, as worker/WorkerApi.h enterPhase() writes it, on virtual time.
void enter(ControlPage &page, unsigned phase, uint64_t atNs) {
  page.phaseEnteredNs.store(atNs, std::memory_order_relaxed);
  page.phaseEntries.fetch_add(1, std::memory_order_relaxed);
  page.phase.store(phase, std::memory_order_release);
}
bool wakes(const ControlPage &page, unsigned phase) { return page.phaseWake.load() & (1u << (phase - 1)); }

struct LendingNodeTest : ::testing::Test {
  ManualClock clock{1000 * kMs};
  SimLoans loans{clock, 50 * kUs};
  ControlPage page{};
  LendingNode node{clock, loans};
};

TEST_F(LendingNodeTest, NothingIsLentBeforeTheFirstPhase) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 4);
  TickResult r = node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty());
  EXPECT_TRUE(node.loans().empty());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_LE(r.nextNs, clock.monotonicNs() + LendingOptions{}.pollNs) << "a worker phase is not due: it polls";
}

TEST_F(LendingNodeTest, APhaseLendsWhatItDoesNotKeepAndItsEntryIsReclaimedWithinTheBound) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3, 4, 5}));
  EXPECT_EQ(node.phaseOf("train"), 1u);
  ASSERT_EQ(node.loans().size(), 1u);
  EXPECT_EQ(node.loans()[0].owner, "train");
  EXPECT_EQ(node.loans()[0].cpus, (CpuSet{2, 3, 4, 5}));
  EXPECT_TRUE(wakes(page, 2)) << "compute keeps lent CPUs: entering it must wake the node";
  EXPECT_FALSE(wakes(page, 1));

  clock.advance(3 * kMs);
  uint64_t enteredAt = clock.monotonicNs();
  enter(page, 2, enteredAt);
  EXPECT_TRUE(intersects(loans.cpusOf("prep"), {2, 3})) << "without a rhythm the entry finds them lent";
  clock.advance(30 * kUs); // the futex wake-up
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1, 4, 5}));
  const ReclaimStats &s = node.ledger().stats("train");
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.reclaims, 1u);
  EXPECT_EQ(s.missed, 0u);
  ASSERT_EQ(s.latenciesNs.size(), 2u);
  EXPECT_EQ(s.latenciesNs.back(), 30 * kUs + 50 * kUs) << "the wake-up and one shrink";
  EXPECT_TRUE(wakes(page, 1)) << "decode's 0,1 are lent now";
  EXPECT_FALSE(wakes(page, 2));
}

TEST_F(LendingNodeTest, LendableCoreTimeCountsWhatThePhasesDoNotKeepBorrowedOrNot) {
  // What the cluster's placement of borrowers reads (cluster/agent's LendingReporter): the CPUs
  // the owner could lend over time, whether a borrower took them or not.
  node.addOwner(trainer(), &page);
  node.tick(); // between phases: it keeps all six
  EXPECT_EQ(node.lendableCores(), 0u);
  clock.advance(10 * kMs);
  enter(page, 1, clock.monotonicNs()); // decode keeps 0,1: 2..5 lendable
  node.tick();
  EXPECT_EQ(node.lendableCores(), 4u);
  EXPECT_EQ(node.lendableCoreNs(), 0u) << "nothing was lendable during the first 10 ms";
  clock.advance(6 * kMs);
  enter(page, 2, clock.monotonicNs()); // compute keeps 2,3: 0,1,4,5 lendable
  node.tick();
  EXPECT_EQ(node.lendableCoreNs(), 4 * 6 * kMs);
  EXPECT_EQ(node.lentCoreNs(), 0u) << "no borrower: nothing lent, though it was lendable";
  clock.advance(4 * kMs);
  node.tick();
  EXPECT_EQ(node.lendableCoreNs(), 4 * 10 * kMs);
}

TEST_F(LendingNodeTest, AReclaimSlowerThanTheBoundIsAMissedDeadline) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  loans.setCost(3 * kMs);
  clock.advance(kMs);
  enter(page, 2, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(node.ledger().stats("train").missed, 1u);
  EXPECT_FALSE(intersects(loans.cpusOf("prep"), {2, 3})) << "late, but taken back";
}

// A periodic job (decode 3 ms, compute 7 ms, with a deterministic jitter of up to +-5%), run event
// by event: an entry happens at its time, also while the node is inside a cgroup change (SimLoans'
// hook), and wakes the node 30 us later where the wake mask says so. The observer notes what the
// borrower holds at the instant of each entry, and whether a change made as it entered lent its
// CPUs after all.
struct PeriodicRun {
  static constexpr unsigned kCycles = 200, kWarmup = 10;
  unsigned foundLent = 0, lentAfter = 0, missesAfterWarmup = 0;
  uint64_t worstTickNs = 0;
  double harvest = 0; // lent core-time over the lendable: 4 of the 6 CPUs at every instant
  ReclaimStats stats;
};

PeriodicRun runPeriodic(Owner owner) {
  ManualClock clock{1000 * kMs};
  SimLoans loans{clock, 50 * kUs};
  ControlPage page{};
  LendingNode node{clock, loans};
  node.addOwner(std::move(owner), &page);
  node.addBorrower("prep", 8);
  const CpuSet kept[] = {{}, {0, 1}, {2, 3}};
  const uint64_t length[] = {0, 3 * kMs, 7 * kMs};
  uint64_t seed = 42;
  auto jitter = [&](uint64_t ns) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return ns - ns / 20 + (seed >> 33) % (ns / 10);
  };

  PeriodicRun run;
  const unsigned total = 2 * PeriodicRun::kCycles, warm = 2 * PeriodicRun::kWarmup;
  unsigned entries = 0, phase = 0;
  bool home = false;
  uint64_t nextEntryNs = clock.monotonicNs(), wakeNs = UINT64_MAX;
  auto enterDue = [&] {
    while (entries < total && nextEntryNs <= clock.monotonicNs()) {
      phase = phase == 1 ? 2 : 1;
      home = !intersects(loans.cpusOf("prep"), kept[phase]);
      if (!home) {
        ++run.foundLent;
        run.missesAfterWarmup += entries >= warm;
      }
      enter(page, phase, nextEntryNs);
      if (wakes(page, phase))
        wakeNs = std::min(wakeNs, nextEntryNs + 30 * kUs);
      ++entries;
      nextEntryNs += jitter(length[phase]);
    }
  };
  loans.onChange(enterDue);
  uint64_t tickNs = clock.monotonicNs() + kUs;
  for (int guard = 0; entries < total; ++guard) {
    if (guard > 100'000) {
      ADD_FAILURE() << "the node keeps ticking without time passing";
      break;
    }
    uint64_t next = std::min({tickNs, wakeNs, nextEntryNs});
    clock.set(std::max(clock.monotonicNs(), next));
    enterDue();
    if (clock.monotonicNs() >= std::min(tickNs, wakeNs)) {
      wakeNs = UINT64_MAX;
      uint64_t before = clock.monotonicNs();
      TickResult r = node.tick();
      EXPECT_TRUE(r.errors.empty());
      run.worstTickNs = std::max(run.worstTickNs, clock.monotonicNs() - before);
      tickNs = std::max(r.nextNs, clock.monotonicNs());
      if (home && phase && intersects(loans.cpusOf("prep"), kept[phase])) {
        ++run.lentAfter;
        run.missesAfterWarmup += entries > warm;
        home = false;
      }
    }
  }
  clock.advance(30 * kUs);
  node.tick(); // the last entry's
  run.stats = node.ledger().stats("train");
  run.harvest = double(node.lentCoreNs()) / double(4 * (clock.monotonicNs() - 1000 * kMs));
  return run;
}

// With lead = auto, once the rhythm is learnt, every entry finds what its phase keeps home, checked
// from the borrower's side; none misses the bound, the ledger agrees with the observer, and most of
// the idle time is lent.
TEST(LendingNode, LeadAutoTakesCpusBackBeforeEveryPhaseOfAPeriodicJob) {
  PeriodicRun run = runPeriodic(trainer());
  EXPECT_GT(run.foundLent, 0u) << "before the rhythm is learnt an entry finds its CPUs lent";
  EXPECT_EQ(run.missesAfterWarmup, 0u) << "after it, every entry finds them home, and they stay home";
  EXPECT_EQ(run.stats.entries, 2 * PeriodicRun::kCycles);
  EXPECT_EQ(run.stats.reclaims, run.foundLent + run.lentAfter) << "the ledger counts what the observer saw";
  EXPECT_EQ(run.stats.missed, 0u);
  // The worst: an entry while a change is under way, then the wake-up and one more change.
  EXPECT_LE(quantile(run.stats.latenciesNs, 1.0), 30 * kUs + 2 * run.worstTickNs);
  EXPECT_GT(run.harvest, 0.75);
  std::printf("lead = auto, %u cycles: %u entries found their CPUs lent (%u lent while entering), harvest %.3f\n",
              PeriodicRun::kCycles, run.foundLent + run.lentAfter, run.lentAfter, run.harvest);
}

// With `lead = 0ms` (no anticipation) every entry finds what it keeps lent and waits for the wake-up
// and the shrink, still within the bound; more is lent, for longer.
TEST(LendingNode, WithALeadOfZeroEveryEntryWaitsForItsReclaimWithinTheBound) {
  Owner o = trainer();
  o.leadAuto = false;
  o.leadNs = 0;
  PeriodicRun run = runPeriodic(o);
  PeriodicRun ahead = runPeriodic(trainer());
  EXPECT_EQ(run.foundLent + run.lentAfter, 2 * PeriodicRun::kCycles - 1) << "all but the first, made before any loan";
  EXPECT_EQ(run.stats.missed, 0u);
  EXPECT_GE(quantile(run.stats.latenciesNs, 0.5), 30 * kUs + 50 * kUs);
  EXPECT_GT(run.harvest, ahead.harvest);
}

TEST_F(LendingNodeTest, AnEntryDuringTheTakeBackIsDecidedBeforeAnythingMoreIsLent) {
  Owner o = trainer();
  o.phases.push_back({"eval", {4, 5}});
  node.addOwner(o, &page);
  node.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  ASSERT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3, 4, 5}));
  clock.advance(kMs);
  enter(page, 2, clock.monotonicNs()); // compute: 2,3 come back, 0,1 would be lent ...
  bool once = false;
  loans.onChange([&] {
    if (!once) // ... but while 2,3 are taken back the worker enters eval, which keeps 4,5 too
      enter(page, 3, clock.monotonicNs());
    once = true;
  });
  TickResult r = node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{4, 5})) << "nothing more is lent in the tick that saw the entry";
  EXPECT_LE(r.nextNs, clock.monotonicNs()) << "and it is decided again at once";
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1, 2, 3})) << "eval: 4,5 back, decode's and compute's lent";
}

// A lead started the take-back of compute's CPUs ahead, but the kernel was still at it (a freeze
// waiting for the borrower's threads) when the worker entered compute: the CPUs are home when the
// node next reads the page, yet the owner waited from its entry until the take-back returned.
TEST_F(LendingNodeTest, AnEntryWhileItsCpusAreStillBeingTakenBackCountsAsAReclaim) {
  Owner o = trainer();
  o.leadAuto = false;
  o.leadNs = 2 * kMs;
  node.addOwner(o, &page);
  node.addBorrower("prep", 8);
  // decode every 10 ms: entries at 0, 10, 20 ms give it a rhythm of 10 ms.
  for (int i = 0; i < 3; ++i) {
    enter(page, 1, clock.monotonicNs());
    node.tick();
    clock.advance(3 * kMs);
    enter(page, 2, clock.monotonicNs());
    node.tick();
    clock.advance(7 * kMs);
  }
  ASSERT_EQ(node.ledger().stats("train").missed, 0u);
  // Into compute; 1.5 ms before the next decode its lead begins. The take-back of 0,1 takes 3 ms in
  // the kernel, and decode is entered 0.5 ms into it.
  enter(page, 1, clock.monotonicNs());
  node.tick();
  clock.advance(3 * kMs);
  enter(page, 2, clock.monotonicNs());
  node.tick();
  clock.advance(4 * kMs);
  node.tick();
  ASSERT_TRUE(intersects(loans.cpusOf("prep"), {0, 1})) << "decode's CPUs are lent before its lead";
  clock.advance(1500 * kUs);
  uint64_t reclaimsBefore = node.ledger().stats("train").reclaims;
  loans.setCost(3 * kMs);
  uint64_t enteredAt = 0;
  loans.onChange([&] {
    if (!enteredAt) {
      enteredAt = clock.monotonicNs() - 2500 * kUs;
      enter(page, 1, enteredAt);
    }
  });
  node.tick(); // the lead's take-back, 3 ms in the kernel
  loans.onChange({});
  loans.setCost(50 * kUs);
  uint64_t home = clock.monotonicNs();
  EXPECT_FALSE(intersects(loans.cpusOf("prep"), {0, 1}));
  node.tick(); // reads the entry
  const ReclaimStats &s = node.ledger().stats("train");
  EXPECT_EQ(s.reclaims, reclaimsBefore + 1) << "the entry found its CPUs still being taken back";
  ASSERT_FALSE(s.latenciesNs.empty());
  EXPECT_EQ(s.latenciesNs.back(), home - enteredAt);
  EXPECT_EQ(s.missed, 1u) << "2.5 ms after the entry is past the bound of 2 ms";
}

// The borrower's IO to a device the owner keeps is throttled before anything else moves, and lifted
// once no phase has kept it for the hold (LendingOptions::ioHoldNs: a short gap would reset the
// kernel's budget); a throttle the mechanism refuses freezes the borrower and lends it nothing.
TEST_F(LendingNodeTest, IoIsThrottledWhileThePhaseKeepsItAndAFailedThrottleFreezes) {
  Owner o = trainer();
  o.ioDevices = {"nvme0n1"};
  o.phases[0].keptDevices = {"nvme0n1"}; // decode keeps its loader's io
  o.leadAuto = false; // reclaim on entry: the entries alone decide
  o.leadNs = 0;
  node.addOwner(o, &page);
  node.addBorrower("prep", 2);
  enter(page, 2, clock.monotonicNs()); // compute: decode's CPUs and device lent
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1}));
  EXPECT_TRUE(loans.throttledOf("prep").empty());
  clock.advance(kMs);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(loans.throttledOf("prep"), (std::vector<std::string>{"nvme0n1"}));
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
  clock.advance(kMs);
  enter(page, 2, clock.monotonicNs());
  TickResult lent = node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1})) << "its CPUs lent again";
  EXPECT_EQ(loans.throttledOf("prep"), (std::vector<std::string>{"nvme0n1"})) << "its throttle held over a short gap";
  uint64_t liftAt = clock.monotonicNs() - kMs - 50 * kUs + LendingOptions{}.ioHoldNs;
  EXPECT_LE(lent.nextNs, liftAt + 100 * kUs);
  clock.set(liftAt + 100 * kUs);
  node.tick();
  EXPECT_TRUE(loans.throttledOf("prep").empty()) << "lifted once the hold is over";

  loans.failThrottles(true);
  clock.advance(kMs);
  enter(page, 1, clock.monotonicNs());
  TickResult r = node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "an unthrottled borrower runs on nothing while decode keeps its io";
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].find("IO throttle [nvme0n1]: sim: the IO throttle of borrower 'prep' refused; frozen instead"),
            std::string::npos)
      << r.errors[0];
  clock.advance(kMs);
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "lent nothing until the throttle holds";
  loans.failThrottles(false);
  clock.advance(kMs);
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
  EXPECT_EQ(loans.throttledOf("prep"), (std::vector<std::string>{"nvme0n1"}));
}

TEST_F(LendingNodeTest, AShrinkThatFailsFreezesTheBorrower) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  loans.failShrinks("prep", true);
  clock.advance(kMs);
  enter(page, 2, clock.monotonicNs());
  TickResult r = node.tick();
  ASSERT_EQ(r.errors.size(), 2u) << "the shrink, and the grow after it is refused too";
  EXPECT_NE(r.errors[0].find("frozen instead"), std::string::npos) << r.errors[0];
  EXPECT_TRUE(loans.cpusOf("prep").empty());
  EXPECT_FALSE(loans.ended("prep"));
  EXPECT_EQ(node.ledger().stats("train").missed, 0u);
  EXPECT_TRUE(node.loans().empty());
  loans.failShrinks("prep", false);
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1, 4, 5})) << "lent again once the mechanism works";
}

// A mechanism that cannot freeze either: the borrower is ended.
class Unfreezable final : public LoanMechanism {
public:
  bool setCpus(const std::string &, const CpuSet &cpus, std::string &error) override {
    if (!armed || cpus.size() >= held.size()) {
      held = cpus;
      return true;
    }
    error = "cgroup gone";
    return false;
  }
  Settle settle(const std::string &, std::string &) override { return Settle::Done; }
  bool throttleIo(const std::string &, const std::vector<std::string> &, std::string &) override { return true; }
  void end(const std::string &) override {
    ended = true;
    held.clear();
  }
  bool armed = false, ended = false;
  CpuSet held;
};

TEST_F(LendingNodeTest, AFreezeThatFailsToEndsTheBorrower) {
  Unfreezable mechanism;
  LendingNode n{clock, mechanism};
  n.addOwner(trainer(), &page);
  n.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  n.tick();
  ASSERT_EQ(mechanism.held, (CpuSet{2, 3, 4, 5}));
  mechanism.armed = true;
  enter(page, 2, clock.monotonicNs());
  TickResult r = n.tick();
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].find("ended"), std::string::npos) << r.errors[0];
  EXPECT_TRUE(mechanism.ended);
  EXPECT_TRUE(mechanism.held.empty()) << "an ended borrower is lent nothing more";
  EXPECT_TRUE(n.cpusOf("prep").empty());
}

// A freeze whose threads wait to be scheduled (an owner's thread on their CPU) does not hold the
// node: the CPUs are not back until it settles, and when the next decision lends the borrower
// other CPUs it moves there at once instead, which gives them back.
TEST_F(LendingNodeTest, ASlowFreezeHoldsItsCpusUntilItSettlesOrTheBorrowerMovesElsewhere) {
  Owner o = trainer();
  o.cpus = {0, 1, 2, 3};
  o.phases = {{"decode", {0, 1}}, {"compute", {2, 3}}, {"all", {0, 1, 2, 3}}};
  node.addOwner(o, &page);
  node.addBorrower("prep", 2);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  ASSERT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
  loans.setFreezeTime(5 * kMs);

  // "all" keeps everything: the borrower must freeze, which takes 5 ms.
  clock.advance(kMs);
  uint64_t allAt = clock.monotonicNs();
  enter(page, 3, allAt);
  TickResult r = node.tick();
  EXPECT_TRUE(loans.freezing("prep"));
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3})) << "still there while it freezes";
  EXPECT_LE(r.nextNs, clock.monotonicNs() + LendingOptions{}.settlePollNs) << "the node looks again soon";
  EXPECT_TRUE(node.loans().size() == 1 && node.loans()[0].cpus == (CpuSet{2, 3})) << "not back yet";
  clock.advance(kMs);
  r = node.tick();
  EXPECT_TRUE(node.ledger().open("train")) << "the entry still waits";
  EXPECT_GE(r.nextNs, clock.monotonicNs() + 250 * kUs);
  EXPECT_LE(r.nextNs, clock.monotonicNs() + 300 * kUs)
      << "a freeze 1 ms under way is looked at again after a quarter of that: the loop runs SCHED_FIFO, and "
         "polling every 20 us would take the CPU the freezing tasks need";

  // Compute entered 2 ms into the freeze: 0,1 are lendable now, and the borrower moves there.
  clock.advance(kMs);
  enter(page, 2, clock.monotonicNs());
  node.tick();
  EXPECT_FALSE(loans.freezing("prep"));
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1}));
  const ReclaimStats &s = node.ledger().stats("train");
  EXPECT_FALSE(node.ledger().open("train"));
  EXPECT_EQ(s.latenciesNs.back(), clock.monotonicNs() - allAt) << "all's wait ended with the move";

  // Frozen for good when nothing is lendable, once the kernel says so.
  clock.advance(kMs);
  enter(page, 3, clock.monotonicNs());
  node.tick();
  for (int i = 0; i < 6 && loans.freezing("prep"); ++i) {
    clock.advance(kMs);
    node.tick();
  }
  EXPECT_FALSE(loans.freezing("prep"));
  EXPECT_TRUE(loans.cpusOf("prep").empty());
  EXPECT_TRUE(node.loans().empty());
}

TEST_F(LendingNodeTest, AFreezeThatNeverSettlesEndsTheBorrower) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  loans.setFreezeTime(UINT64_MAX, 200 * kMs);
  loans.failShrinks("prep", true); // compute's take-back cannot shrink it: it freezes, forever
  clock.advance(kMs);
  enter(page, 2, clock.monotonicNs());
  node.tick();
  EXPECT_TRUE(loans.freezing("prep"));
  std::vector<std::string> errors;
  for (int i = 0; i < 300 && !loans.ended("prep"); ++i) {
    clock.advance(kMs);
    TickResult r = node.tick();
    errors.insert(errors.end(), r.errors.begin(), r.errors.end());
  }
  EXPECT_TRUE(loans.ended("prep"));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors.back().find("did not freeze"), std::string::npos) << errors.back();
  EXPECT_TRUE(node.loans().empty());
  clock.advance(kMs);
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "an ended borrower is lent nothing";

  // Its supervisor starts a new worker: frozen again and lent as before from the next tick.
  loans.failShrinks("prep", false);
  std::string error;
  ASSERT_TRUE(node.reviveBorrower("prep", error)) << error;
  EXPECT_FALSE(node.ended("prep"));
  clock.advance(kMs);
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1, 4, 5})) << "compute lends all but its own";
}

TEST_F(LendingNodeTest, ARemovedOwnerGetsEverythingBackAndIsForgotten) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  ASSERT_FALSE(loans.cpusOf("prep").empty());
  node.removeOwner("train");
  page.phase.store(2); // no longer read
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty());
  EXPECT_TRUE(node.loans().empty());
  EXPECT_EQ(node.phaseOf("train"), 0u);
}

TEST_F(LendingNodeTest, APhaseNumberPastThePlanKeepsEverything) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 8);
  enter(page, 7, clock.monotonicNs());
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty());
  EXPECT_EQ(node.phaseOf("train"), 0u);
}

TEST_F(LendingNodeTest, EntriesMadeBeforeTheNodeKnewTheOwnerAreNotAccounted) {
  enter(page, 1, clock.monotonicNs());
  enter(page, 2, clock.monotonicNs());
  page.phaseWake.store(0b11);
  node.addOwner(trainer(), &page);
  EXPECT_EQ(page.phaseWake.load(), 0u);
  node.addBorrower("prep", 8);
  node.tick();
  EXPECT_EQ(node.ledger().stats("train").entries, 0u);
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{0, 1, 4, 5})) << "it is in compute: decode's CPUs are lent";
}

TEST_F(LendingNodeTest, BorrowersShareWhatIsLentInAdmissionOrder) {
  node.addOwner(trainer(), &page);
  node.addBorrower("a", 1);
  node.addBorrower("b", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(loans.cpusOf("a"), (CpuSet{2}));
  EXPECT_EQ(loans.cpusOf("b"), (CpuSet{3, 4, 5}));
  node.removeBorrower("a");
  node.tick();
  EXPECT_EQ(loans.cpusOf("b"), (CpuSet{2, 3, 4, 5}));
  std::vector<Loan> l = node.loans();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].borrower, "b");
}

// ---- a borrower that cooperates is asked to yield before it is frozen -----------------------

// An owner of CPUs 2,3 that lends both while it decodes and keeps both while it computes, without
// anticipating (lead = 0ms): a borrower of them is frozen, not shrunk, when compute is entered.
Owner lender() {
  Owner o;
  o.contract = "train";
  o.cpus = {2, 3};
  o.phases = {{"decode", {}}, {"compute", {2, 3}}};
  o.reclaimWithinNs = 2 * kMs;
  o.leadAuto = false;
  return o;
}

struct YieldTest : LendingNodeTest {
  ControlPage borrowerPage{};
  uint64_t computeAt = 0;
  // Lent while decoding, then compute entered and the node woken 30 us later.
  TickResult lendThenCompute(bool cooperates) {
    borrowerPage.cooperates.store(cooperates ? 1 : 0);
    node.addOwner(lender(), &page);
    node.addBorrower("prep", 2, &borrowerPage);
    enter(page, 1, clock.monotonicNs());
    node.tick();
    EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
    clock.advance(3 * kMs);
    computeAt = clock.monotonicNs();
    enter(page, 2, computeAt);
    clock.advance(30 * kUs);
    return node.tick();
  }
};

TEST_F(YieldTest, ABorrowerThatCooperatesIsAskedFirstAndFrozenWhenItYields) {
  TickResult r = lendThenCompute(true);
  uint32_t ask = borrowerPage.yieldAsk.load();
  EXPECT_NE(ask, 0u) << "asked to yield";
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3})) << "not frozen while it has time";
  // Half the 2 ms bound is kept for the freeze itself: what is left of the bound is given.
  EXPECT_EQ(borrowerPage.yieldByNs.load(), computeAt + 1 * kMs);
  EXPECT_LE(r.nextNs, computeAt + 1 * kMs);
  EXPECT_EQ(node.yieldStats().asked, 1u);

  clock.advance(200 * kUs);
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3})) << "it has not yielded yet";
  borrowerPage.yieldAck.store(ask); // yieldNow()
  clock.advance(100 * kUs);
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "frozen once it yielded";
  EXPECT_EQ(node.yieldStats().yielded, 1u);
  EXPECT_EQ(borrowerPage.yieldAsk.load(), ask) << "asked still while frozen: its yieldNow() waits";
  const ReclaimStats &s = node.ledger().stats("train");
  EXPECT_EQ(s.missed, 0u);
  EXPECT_EQ(s.latenciesNs.back(), 330 * kUs + 50 * kUs) << "the wake-up, the notice, the freeze";

  clock.advance(2 * kMs);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
  EXPECT_EQ(borrowerPage.yieldAsk.load(), 0u) << "lent again: its yieldNow() returns";
}

TEST_F(YieldTest, ABorrowerThatIgnoresTheAskIsFrozenWhenItsTimeIsUp) {
  TickResult r = lendThenCompute(true);
  uint64_t by = borrowerPage.yieldByNs.load();
  while (loans.cpusOf("prep") == CpuSet{2, 3}) {
    ASSERT_LT(clock.monotonicNs(), by) << "still on the owner's CPUs when its time was up";
    clock.set(std::max(r.nextNs, clock.monotonicNs() + 1));
    r = node.tick();
  }
  EXPECT_TRUE(loans.cpusOf("prep").empty());
  EXPECT_EQ(clock.monotonicNs(), by + 50 * kUs) << "frozen at its time, not before";
  EXPECT_EQ(node.yieldStats().expired, 1u);
  EXPECT_EQ(node.yieldStats().yielded, 0u);
  const ReclaimStats &s = node.ledger().stats("train");
  EXPECT_EQ(s.missed, 0u) << "the notice is given out of the bound, not on top of it";
  EXPECT_LE(s.latenciesNs.back(), 2 * kMs);
}

TEST_F(YieldTest, ABorrowerThatDoesNotCooperateIsFrozenUnasked) {
  lendThenCompute(false);
  EXPECT_TRUE(loans.cpusOf("prep").empty());
  EXPECT_EQ(borrowerPage.yieldAsk.load(), 0u);
  EXPECT_EQ(node.yieldStats().asked, 0u);
}

TEST_F(YieldTest, TheAskIsWithdrawnWhenTheOwnerLendsAgainFirst) {
  lendThenCompute(true);
  ASSERT_NE(borrowerPage.yieldAsk.load(), 0u);
  clock.advance(300 * kUs);
  enter(page, 1, clock.monotonicNs()); // a short compute: decode again within the notice
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
  EXPECT_EQ(borrowerPage.yieldAsk.load(), 0u);
  EXPECT_EQ(node.yieldStats().withdrawn, 1u);
}

TEST_F(YieldTest, ALateWakeLeavesNoTimeToAsk) {
  borrowerPage.cooperates.store(1);
  node.addOwner(lender(), &page);
  node.addBorrower("prep", 2, &borrowerPage);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  clock.advance(3 * kMs);
  enter(page, 2, clock.monotonicNs());
  clock.advance(1 * kMs); // the node woke late: past the margin kept for the freeze
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "frozen at once";
  EXPECT_EQ(node.yieldStats().asked, 0u);
}

TEST_F(YieldTest, AnAnticipatedReclaimAsksForTheCPUsBeforeThePhaseIsExpected) {
  Owner o = lender();
  o.leadNs = 2 * kMs; // a fixed lead: the reclaim starts 2 ms before compute is expected
  borrowerPage.cooperates.store(1);
  node.addOwner(o, &page);
  node.addBorrower("prep", 2, &borrowerPage);
  // A steady rhythm: decode 4 ms, compute 4 ms.
  for (int cycle = 0; cycle < 6; ++cycle) {
    enter(page, 1, clock.monotonicNs());
    node.tick();
    clock.advance(4 * kMs);
    enter(page, 2, clock.monotonicNs());
    node.tick();
    clock.advance(4 * kMs);
  }
  enter(page, 1, clock.monotonicNs());
  uint64_t expected = clock.monotonicNs() + 4 * kMs; // compute's next entry
  TickResult r = node.tick();
  while (!borrowerPage.yieldAsk.load() && clock.monotonicNs() < expected) {
    clock.set(std::max(r.nextNs, clock.monotonicNs() + 1));
    r = node.tick();
  }
  ASSERT_NE(borrowerPage.yieldAsk.load(), 0u) << "asked before compute";
  EXPECT_LT(clock.monotonicNs(), expected);
  EXPECT_LE(borrowerPage.yieldByNs.load(), expected) << "to be frozen before the phase it makes room for";
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
}

// A borrower to be frozen off CPUs an owner needs now and others it needs only soon leaves the first
// at once (a shrink) and freezes on the second: the entry's reclaim does not wait for the freeze.
TEST_F(LendingNodeTest, AFreezeTakesPlaceOnTheCPUsNeededLaterNotOnThoseNeededNow) {
  Owner o;
  o.contract = "train";
  o.cpus = {2, 3};
  o.phases = {{"decode", {2}}, {"compute", {}}};
  PhaseSpec eval{"eval", {3}};
  eval.trigger = PhaseSpec::Trigger::Steps;
  eval.everySteps = 100;
  eval.forSteps = 10;
  o.phases.push_back(eval);
  o.leadAuto = false;
  o.leadNs = 5 * kMs;
  node.addOwner(o, &page);
  node.addBorrower("prep", 2);
  enter(page, 2, clock.monotonicNs()); // compute: 2 and 3 lent
  for (uint64_t step = 1; step <= 50; ++step) { // a step a millisecond: the node learns it
    clock.advance(kMs);
    page.step.store(step);
    node.tick();
  }
  ASSERT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3}));
  loans.setFreezeTime(1 * kMs);
  // Steps go on without waking the node, then decode is entered four steps before eval is due:
  // decode needs CPU 2 now, eval (within the 5 ms lead) CPU 3 soon.
  clock.advance(46 * kMs);
  page.step.store(96);
  uint64_t enteredAt = clock.monotonicNs();
  enter(page, 1, enteredAt);
  clock.advance(30 * kUs);
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{3})) << "off CPU 2 at once, freezing on CPU 3";
  EXPECT_TRUE(loans.freezing("prep"));
  const ReclaimStats &s = node.ledger().stats("train");
  ASSERT_FALSE(s.latenciesNs.empty());
  // The wake-up, the shrink and the freeze's write after it (the take-back pass), not the freeze itself.
  EXPECT_EQ(s.latenciesNs.back(), 30 * kUs + 50 * kUs + 50 * kUs);
  for (int i = 0; i < 100 && loans.freezing("prep"); ++i) {
    clock.advance(100 * kUs);
    node.tick();
  }
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "frozen before eval";
  EXPECT_LT(clock.monotonicNs(), enteredAt + 4 * kMs);
}

// ---- an owner's fault --------------------------------------------------------------------------

TEST_F(LendingNodeTest, AFaultedOwnerKeepsEverythingUntilItsNextWorkerEntersAPhase) {
  node.addOwner(trainer(), &page);
  node.addBorrower("prep", 8);
  enter(page, 1, clock.monotonicNs());
  node.tick();
  ASSERT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3, 4, 5}));
  ASSERT_TRUE(node.lends("train"));
  clock.advance(kMs);
  node.hold("train"); // its worker died in decode: the page says decode still
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "everything back before recovery starts";
  EXPECT_FALSE(node.lends("train"));
  clock.advance(10 * kMs);
  node.tick();
  EXPECT_TRUE(loans.cpusOf("prep").empty()) << "the dead worker's phase lends nothing";
  enter(page, 1, clock.monotonicNs()); // the next worker, restored, decodes
  node.tick();
  EXPECT_EQ(loans.cpusOf("prep"), (CpuSet{2, 3, 4, 5}));
  EXPECT_EQ(node.ledger().stats("train").missed, 0u);
}

} // namespace
} // namespace msc::exec::lending
