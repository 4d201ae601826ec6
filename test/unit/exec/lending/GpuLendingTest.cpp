// GPU units lent and taken back, in virtual time, through BackendGpuLoans over the `sim` GPU
// backend: what is checked is what the backend holds (each slice's SMs) and what the borrower's
// control page was told, not the node's own view; the ledger is checked against them.
#include "executor/gpu/SimGpuBackend.h"
#include "executor/lending/GpuLoans.h"
#include "executor/lending/LendingNode.h"
#include "executor/lending/SimLoans.h"
#include "worker/ControlPage.h"

#include <gtest/gtest.h>

#include <cstring>

namespace msc::exec::lending {
namespace {

using mscale::worker::ControlPage;

constexpr uint64_t kUs = 1'000, kMs = 1'000'000;

void enter(ControlPage &page, unsigned phase, uint64_t atNs) {
  page.phaseEnteredNs.store(atNs, std::memory_order_relaxed);
  page.phaseEntries.fetch_add(1, std::memory_order_relaxed);
  page.phase.store(phase, std::memory_order_release);
}
std::string told(const ControlPage &page) { return std::string(page.slices, strnlen(page.slices, sizeof page.slices)); }
void acknowledge(ControlPage &page) { page.ackGeneration.store(page.sliceGeneration.load()); }

// A trainer on CPUs 0..3 with one GPU slice of 4 units (128 of GPU 0's 132 SMs): decode keeps the
// loader's CPUs 0,1; compute keeps the trainer's CPUs 2,3 and its GPU slice.
struct GpuLendingTest : ::testing::Test {
  void SetUp() override {
    SimGpuConfig gpu;
    gpu.smCount = 132;
    backend = std::make_unique<SimGpuBackend>(std::vector<SimGpuConfig>{gpu});
    plan::GpuSlice slice;
    slice.set_role("trainer");
    slice.set_sm_count(128);
    slice.set_slices(4);
    std::string error;
    std::optional<SliceId> id = backend->createSlice(slice, error);
    ASSERT_TRUE(id) << error;
    ownerSlice = *id;
    ASSERT_TRUE(gpuLoans.addShare("train", 0, *backend, ownerSlice, 4, 0, error)) << error;
    node.setShareMechanism(kGpuShare, &gpuLoans);
    Owner o;
    o.contract = "train";
    o.cpus = {0, 1, 2, 3};
    o.gpuShares = {{"trainer", 0, "", 4, 32}};
    o.phases = {{"decode", {0, 1}}, {"compute", {2, 3}}};
    o.phases[1].keptShares[kGpuShare] = {0};
    o.reclaimWithinNs = 2 * kMs;
    node.addOwner(o, &ownerPage);
  }
  ManualClock clock{1000 * kMs};
  SimLoans loans{clock, 50 * kUs};
  std::unique_ptr<SimGpuBackend> backend;
  SliceId ownerSlice = 0;
  BackendGpuLoans gpuLoans;
  LendingNode node{clock, loans};
  ControlPage ownerPage{}, borrowerPage{};
};

TEST_F(GpuLendingTest, APhaseThatDoesNotKeepTheGpuLendsItsUnitsAndTheEntryThatKeepsItTakesThemBack) {
  gpuLoans.setPage("infer", &borrowerPage);
  node.addBorrower("infer", 1, &borrowerPage, {2, 0});
  node.tick();
  EXPECT_EQ(gpuLoans.smsOf("infer"), 0u) << "before the first phase the owner keeps its GPU";

  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(node.shareOf("infer", kGpuShare), (ShareLoan{"train", 0, 2}));
  EXPECT_EQ(backend->sliceSms(ownerSlice), 64u) << "the owner's slice handed 2 of its 4 units over";
  EXPECT_EQ(gpuLoans.smsOf("infer"), 64u);
  EXPECT_EQ(backend->freeSms(0), 4u);
  EXPECT_EQ(told(borrowerPage), "lent@0:64:0:0");
  ASSERT_EQ(node.loans().size(), 1u);
  EXPECT_EQ(node.loans()[0].shares[kGpuShare].units, 2u);
  EXPECT_TRUE(ownerPage.phaseWake.load() & 2u) << "compute keeps the lent units: its entry wakes the node";

  acknowledge(borrowerPage);
  clock.advance(3 * kMs);
  enter(ownerPage, 2, clock.monotonicNs());
  clock.advance(30 * kUs);
  node.tick();
  EXPECT_TRUE(node.shareOf("infer", kGpuShare).empty());
  EXPECT_EQ(backend->sliceSms(ownerSlice), 128u) << "the owner's slice is whole again";
  EXPECT_EQ(told(borrowerPage), "") << "the borrower is told to let go";
  EXPECT_EQ(loans.cpusOf("infer"), (CpuSet{0})) << "compute's CPUs are back at once";
  EXPECT_TRUE(node.ledger().open("train")) << "until the borrower acknowledges, the units are not back";

  clock.advance(100 * kUs);
  acknowledge(borrowerPage);
  node.tick();
  EXPECT_FALSE(node.ledger().open("train"));
  EXPECT_TRUE(node.shareOf("infer", kGpuShare).empty()) << "compute keeps the GPU: nothing is lent again";
  const ReclaimStats &s = node.ledger().stats("train");
  EXPECT_EQ(s.missed, 0u);
  ASSERT_FALSE(s.latenciesNs.empty());
  EXPECT_LE(s.latenciesNs.back(), 2 * kMs);
  EXPECT_GE(s.latenciesNs.back(), 130 * kUs) << "counted until the borrower let go, not until the slice was made";
  EXPECT_GT(node.lentUnitNs(kGpuShare), 0u);
}

// What the cluster is told the node lends of its GPU over time: the units of the share its phases
// do not keep, whether a borrower took them or not.
TEST_F(GpuLendingTest, TheUnitTimeLendableIsCountedInPhasesThatDoNotKeepTheGpu) {
  node.tick();
  EXPECT_EQ(node.lendableUnits(kGpuShare), 0u) << "before the first phase the owner keeps its GPU";
  clock.advance(1 * kMs);
  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(node.lendableUnitNs(kGpuShare), 0u);
  EXPECT_EQ(node.lendableUnits(kGpuShare), 4u) << "no borrower: all 4 units lendable all the same";
  clock.advance(3 * kMs);
  enter(ownerPage, 2, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(node.lendableUnitNs(kGpuShare), 4 * 3 * kMs);
  EXPECT_EQ(node.lendableUnits(kGpuShare), 0u) << "compute keeps the GPU";
  clock.advance(5 * kMs);
  node.tick();
  EXPECT_EQ(node.lendableUnitNs(kGpuShare), 4 * 3 * kMs);
  EXPECT_EQ(node.lendableUnitNs(kRdmaShare), 0u) << "no queue pairs here";
  EXPECT_EQ(node.lentUnitNs(kGpuShare), 0u);
}

TEST_F(GpuLendingTest, ABorrowerThatDoesNotLetGoInTimeIsEnded) {
  gpuLoans.setPage("infer", &borrowerPage);
  node.addBorrower("infer", 1, &borrowerPage, {2, 0});
  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  ASSERT_FALSE(node.shareOf("infer", kGpuShare).empty());
  clock.advance(3 * kMs);
  enter(ownerPage, 2, clock.monotonicNs());
  TickResult taken = node.tick();
  EXPECT_FALSE(node.ended("infer"));
  EXPECT_LE(taken.nextNs, clock.monotonicNs() + kMs) << "it is looked at again before its time is up";
  clock.advance(kMs); // half the 2 ms bound, unacknowledged
  TickResult r = node.tick();
  EXPECT_TRUE(node.ended("infer"));
  EXPECT_TRUE(loans.ended("infer"));
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors.back().find("did not let go of its GPU units of 'train' in time"), std::string::npos)
      << r.errors.back();
  EXPECT_FALSE(node.lends("train"));
  EXPECT_EQ(backend->sliceSms(ownerSlice), 128u);
}

TEST_F(GpuLendingTest, AWholeShareIsLentAsTheOwnersOwnSliceAndABorrowerWithoutAWorkerLetsGoAtOnce) {
  node.addBorrower("eval", 0, nullptr, {4, 0}); // asks for no CPU; no worker page yet
  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(node.shareOf("eval", kGpuShare), (ShareLoan{"train", 0, 4}));
  EXPECT_EQ(gpuLoans.smsOf("eval"), 128u);
  EXPECT_EQ(backend->liveSlices(), 1u) << "the owner's slice is the borrower's while it is lent whole";
  clock.advance(kMs);
  enter(ownerPage, 2, clock.monotonicNs());
  node.tick();
  EXPECT_TRUE(node.shareOf("eval", kGpuShare).empty());
  EXPECT_FALSE(node.lends("train"));
  EXPECT_EQ(backend->sliceSms(ownerSlice), 128u);
}

TEST_F(GpuLendingTest, AWorkerWhosePageIsKnownAfterTheLoanIsToldWhatItHasAndANewWorkerOwesNoLetGo) {
  node.addBorrower("infer", 1, nullptr, {2, 0}); // lent before its worker's page is known
  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  ASSERT_EQ(gpuLoans.smsOf("infer"), 64u);
  EXPECT_EQ(told(borrowerPage), "");
  gpuLoans.setPage("infer", &borrowerPage);
  EXPECT_EQ(told(borrowerPage), "lent@0:64:0:0");

  clock.advance(kMs);
  enter(ownerPage, 2, clock.monotonicNs());
  node.tick();
  EXPECT_FALSE(gpuLoans.released("infer")) << "its worker has not acknowledged the let-go";
  ControlPage restarted{};
  gpuLoans.setPage("infer", &restarted);
  EXPECT_TRUE(gpuLoans.released("infer")) << "a new worker holds none of the old one's SMs";
  EXPECT_EQ(told(restarted), "") << "nothing is lent now";
}

TEST_F(GpuLendingTest, AFaultedOwnerKeepsItsGpuAndANodeWithoutAGpuMechanismLendsNone) {
  node.addBorrower("infer", 1, nullptr, {2, 0});
  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  ASSERT_FALSE(node.shareOf("infer", kGpuShare).empty());
  node.hold("train");
  node.tick();
  EXPECT_TRUE(node.shareOf("infer", kGpuShare).empty()) << "recovery starts on all of it";
  EXPECT_EQ(backend->sliceSms(ownerSlice), 128u);

  LendingNode plain{clock, loans};
  Owner o2;
  o2.contract = "o2";
  o2.cpus = {4, 5};
  o2.gpuShares = {{"trainer", 0, "", 4, 32}};
  o2.phases = {{"decode", {4}}};
  plain.addOwner(o2, &borrowerPage);
  plain.addBorrower("b2", 1, nullptr, {1, 0});
  enter(borrowerPage, 1, clock.monotonicNs());
  TickResult r = plain.tick();
  EXPECT_TRUE(plain.shareOf("b2", kGpuShare).empty());
  EXPECT_TRUE(r.errors.empty());
}

TEST(BackendGpuLoans, AFailedLendChangesNothingAndAnUnknownShareIsRefused) {
  SimGpuConfig gpu;
  SimGpuBackend backend({gpu});
  plan::GpuSlice slice;
  slice.set_sm_count(128);
  slice.set_slices(4);
  std::string error;
  SliceId owner = *backend.createSlice(slice, error);
  BackendGpuLoans loans;
  ASSERT_TRUE(loans.addShare("train", 0, backend, owner, 4, 0, error)) << error;
  EXPECT_FALSE(loans.lend("b", {"train", 1, 1}, error));
  EXPECT_NE(error.find("no GPU slice 1"), std::string::npos) << error;
  EXPECT_FALSE(loans.lend("b", {"train", 0, 5}, error));
  EXPECT_NE(error.find("4 of 5 units free"), std::string::npos) << error;
  backend.injectFault(0, SimFault::CreateFails);
  EXPECT_FALSE(loans.lend("b", {"train", 0, 1}, error));
  EXPECT_NE(error.find("injected fault"), std::string::npos) << error;
  EXPECT_EQ(backend.sliceSms(owner), 128u) << "the owner's slice is whole again after the failed hand-over";
  EXPECT_EQ(loans.ownerSms("train", 0), 128u);
  EXPECT_FALSE(loans.addShare("ghost", 0, backend, 999, 1, 0, error));
}

} // namespace
} // namespace msc::exec::lending
