// RDMA queue pairs lent and taken back, in virtual time, through BackendRdmaLoans over the `sim`
// RDMA backend: what is checked is what the backend holds (each group's queue pairs, port, depth)
// and what the borrower's control page was told, not the node's own view; the ledger is checked
// against them.
#include "executor/lending/LendingNode.h"
#include "executor/lending/RdmaLoans.h"
#include "executor/lending/SimLoans.h"
#include "executor/rdma/SimRdmaBackend.h"
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
std::string told(const ControlPage &page) {
  return std::string(page.queuePairs, strnlen(page.queuePairs, sizeof page.queuePairs));
}
void acknowledge(ControlPage &page) { page.queuePairAck.store(page.queuePairGeneration.load()); }

plan::RdmaSetting grads() {
  plan::RdmaSetting s;
  s.set_role("grads");
  s.set_device("mlx5_0");
  s.set_port(1);
  s.set_queue_pairs(4);
  s.set_max_outstanding(64);
  s.set_retry_count(7);
  s.set_timeout_ns(4'000'000);
  s.set_failover_device("mlx5_1");
  s.set_failover_port(1);
  return s;
}

// A trainer on CPUs 0..3 with one queue-pair group of 4 on mlx5_0 port 1 (3 lendable: a group keeps
// one): decode keeps the loader's CPUs 0,1; compute keeps the trainer's CPUs 2,3 and its `rdma`.
struct RdmaLendingTest : ::testing::Test {
  void SetUp() override {
    std::string error;
    std::optional<QpGroupId> id = backend.createQueuePairs(grads(), error);
    ASSERT_TRUE(id) << error;
    ownerGroup = *id;
    ASSERT_TRUE(rdmaLoans.addShare("train", 0, backend, ownerGroup, grads(), error)) << error;
    node.setShareMechanism(kRdmaShare, &rdmaLoans);
    Owner o;
    o.contract = "train";
    o.cpus = {0, 1, 2, 3};
    o.rdmaShares = {{"grads", "mlx5_0", 1, 3}};
    o.phases = {{"decode", {0, 1}}, {"compute", {2, 3}}};
    o.phases[1].keptShares[kRdmaShare] = {0};
    o.reclaimWithinNs = 2 * kMs;
    node.addOwner(o, &ownerPage);
  }
  unsigned queuePairs(QpGroupId id) const { return backend.group(id) ? backend.group(id)->queuePairs : 0; }

  ManualClock clock{1000 * kMs};
  SimLoans loans{clock, 50 * kUs};
  SimRdmaBackend backend{{{"mlx5_0", 1, true, "InfiniBand"}, {"mlx5_1", 1, true, "InfiniBand"}}};
  QpGroupId ownerGroup = 0;
  BackendRdmaLoans rdmaLoans;
  LendingNode node{clock, loans};
  ControlPage ownerPage{}, borrowerPage{};
};

TEST_F(RdmaLendingTest, APhaseThatDoesNotKeepRdmaLendsQueuePairsOnItsPortAndTheEntryThatKeepsItTakesThemBack) {
  rdmaLoans.setPage("prep", &borrowerPage);
  node.addBorrower("prep", 1, &borrowerPage, {0, 2});
  node.tick();
  EXPECT_EQ(rdmaLoans.groupOf("prep"), 0u) << "before the first phase the owner keeps its queue pairs";

  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  EXPECT_EQ(node.shareOf("prep", kRdmaShare), (ShareLoan{"train", 0, 2}));
  EXPECT_EQ(queuePairs(ownerGroup), 2u) << "the owner's group gave 2 of its 4 queue pairs up";
  QpGroupId lent = rdmaLoans.groupOf("prep");
  ASSERT_NE(lent, 0u);
  std::optional<SimQpGroup> g = backend.group(lent);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->device, "mlx5_0");
  EXPECT_EQ(g->port, 1u);
  EXPECT_EQ(g->queuePairs, 2u);
  EXPECT_EQ(g->maxSendWr, 64u) << "made as the owner's were";
  EXPECT_EQ(g->retryCount, backend.group(ownerGroup)->retryCount);
  EXPECT_TRUE(g->failoverDevice.empty()) << "a loan does not follow the owner's failover";
  EXPECT_EQ(told(borrowerPage), "lent@mlx5_0:1:2:64");
  ASSERT_EQ(node.loans().size(), 1u);
  const Loan loan = node.loans()[0];
  EXPECT_EQ(loan.shares[kRdmaShare].units, 2u);
  EXPECT_EQ(loan.shareRoles[kRdmaShare], "grads");
  EXPECT_EQ(loan.rdmaPort, "mlx5_0:1");
  EXPECT_TRUE(ownerPage.phaseWake.load() & 2u) << "compute keeps the lent queue pairs: its entry wakes the node";

  acknowledge(borrowerPage);
  clock.advance(3 * kMs);
  enter(ownerPage, 2, clock.monotonicNs());
  clock.advance(30 * kUs);
  node.tick();
  EXPECT_TRUE(node.shareOf("prep", kRdmaShare).empty());
  EXPECT_FALSE(backend.group(lent)) << "the borrower's group is destroyed";
  EXPECT_EQ(queuePairs(ownerGroup), 4u) << "the owner's group is whole again";
  EXPECT_EQ(backend.liveGroups(), 1u);
  EXPECT_EQ(told(borrowerPage), "") << "the borrower is told to let go";
  EXPECT_TRUE(node.ledger().open("train")) << "until the borrower acknowledges, the queue pairs are not back";

  clock.advance(100 * kUs);
  acknowledge(borrowerPage);
  node.tick();
  EXPECT_FALSE(node.ledger().open("train"));
  const ReclaimStats &s = node.ledger().stats("train");
  EXPECT_EQ(s.missed, 0u);
  ASSERT_FALSE(s.latenciesNs.empty());
  EXPECT_LE(s.latenciesNs.back(), 2 * kMs);
  EXPECT_GE(s.latenciesNs.back(), 130 * kUs) << "counted until the borrower let go, not until the group was destroyed";
  EXPECT_GT(node.lentUnitNs(kRdmaShare), 0u);
  EXPECT_EQ(node.lentUnitNs(kGpuShare), 0u);
}

TEST_F(RdmaLendingTest, ABorrowerThatDoesNotLetGoInTimeIsEndedAndOneAskingForTheWholeGroupGetsNone) {
  rdmaLoans.setPage("prep", &borrowerPage);
  node.addBorrower("prep", 1, &borrowerPage, {0, 3});
  node.addBorrower("greedy", 0, nullptr, {0, 4});
  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  ASSERT_FALSE(node.shareOf("prep", kRdmaShare).empty());
  EXPECT_TRUE(node.shareOf("greedy", kRdmaShare).empty()) << "a group keeps one of its four";
  EXPECT_EQ(queuePairs(ownerGroup), 1u);
  clock.advance(3 * kMs);
  enter(ownerPage, 2, clock.monotonicNs());
  node.tick();
  EXPECT_FALSE(node.ended("prep"));
  clock.advance(kMs); // half the 2 ms bound, unacknowledged
  TickResult r = node.tick();
  EXPECT_TRUE(node.ended("prep"));
  EXPECT_TRUE(loans.ended("prep"));
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors.back().find("did not let go of its RDMA queue pairs of 'train' in time"), std::string::npos)
      << r.errors.back();
  EXPECT_FALSE(node.lends("train"));
  EXPECT_EQ(queuePairs(ownerGroup), 4u);
}

TEST_F(RdmaLendingTest, AnOwnerRemovedTakesItsQueuePairsBackAtOnceAndANewWorkerIsToldWhatItHas) {
  node.addBorrower("prep", 1, nullptr, {0, 2}); // lent before its worker's page is known
  enter(ownerPage, 1, clock.monotonicNs());
  node.tick();
  ASSERT_NE(rdmaLoans.groupOf("prep"), 0u);
  rdmaLoans.setPage("prep", &borrowerPage);
  EXPECT_EQ(told(borrowerPage), "lent@mlx5_0:1:2:64");
  node.removeOwner("train");
  EXPECT_TRUE(node.shareOf("prep", kRdmaShare).empty());
  EXPECT_EQ(backend.liveGroups(), 1u) << "the borrower's group went with the owner's session";
  EXPECT_EQ(told(borrowerPage), "");
}

TEST(BackendRdmaLoans, AFailedLendLeavesTheOwnersGroupWholeAndAnUnknownShareIsRefused) {
  SimRdmaBackend backend({{"mlx5_0", 1, true, "InfiniBand"}});
  std::string error;
  QpGroupId owner = *backend.createQueuePairs(grads(), error);
  BackendRdmaLoans loans;
  EXPECT_FALSE(loans.addShare("train", 0, backend, 0, grads(), error));
  ASSERT_TRUE(loans.addShare("train", 0, backend, owner, grads(), error)) << error;
  EXPECT_FALSE(loans.lend("b", {"train", 1, 1}, error));
  EXPECT_NE(error.find("no queue-pair group 1"), std::string::npos) << error;
  EXPECT_FALSE(loans.lend("b", {"train", 0, 4}, error));
  EXPECT_NE(error.find("has 3 of 4 queue pairs free"), std::string::npos) << error;
  backend.failNextCreate("no more queue pairs on the HCA");
  EXPECT_FALSE(loans.lend("b", {"train", 0, 1}, error));
  EXPECT_NE(error.find("no more queue pairs"), std::string::npos) << error;
  EXPECT_EQ(backend.group(owner)->queuePairs, 4u) << "given back when the borrower's group could not be made";
  EXPECT_EQ(loans.ownerQueuePairs("train", 0), 4u);
  EXPECT_EQ(backend.liveGroups(), 1u);
}

} // namespace
} // namespace msc::exec::lending
