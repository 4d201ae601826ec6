// The agent's lending (executor/agent/NodeLending.h) on a simulated host: what a plan with phases
// lends, which borrowers are admitted against it (and why one is refused), and the loans as the
// owner's worker moves through its phases on its control page, read by the lending loop in real
// time. The mechanism is SimLoans: no cgroup is touched, so no root is needed; the cgroup path is
// BorrowerCgroupTest's, LendingLoopTest's and test/lit/exec/lending-agent.test's.
#include "executor/agent/NodeLending.h"
#include "executor/rdma/SimRdmaBackend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace msc::exec {
namespace {

using namespace std::chrono_literals;

// CPUs 0-3 for the loader, 4-5 for the trainer: decode keeps the loader's, compute the trainer's,
// eval (every 100 steps for 10) nothing.
plan::Plan ownerPlan(const std::string &contract = "train") {
  plan::Plan p;
  p.mutable_provenance()->set_contract(contract);
  plan::IoBinding *loader = p.add_io_bindings();
  loader->set_role("loader");
  for (uint32_t c : {0, 1, 2, 3})
    loader->add_cpus(c);
  plan::IoBinding *trainer = p.add_io_bindings();
  trainer->set_role("trainer");
  for (uint32_t c : {4, 5})
    trainer->add_cpus(c);
  plan::Lending *l = p.mutable_lending();
  auto phase = [&](const char *name, const char *role, std::vector<const char *> kinds) {
    plan::Phase *ph = l->add_phases();
    ph->set_name(name);
    if (role) {
      plan::Phase::Use *u = ph->add_uses();
      u->set_role(role);
      for (const char *k : kinds)
        u->add_exclusive(k);
    }
    return ph;
  };
  phase("decode", "loader", {"cpu", "io"});
  phase("compute", "trainer", {"cpu", "gpu"});
  plan::Phase *eval = phase("eval", nullptr, {});
  eval->set_trigger(plan::Phase::STEPS);
  eval->set_every_steps(100);
  eval->set_for_steps(10);
  l->set_reclaim_within_ns(2'000'000);
  l->set_lead_ns(0);
  return p;
}

plan::Plan borrowerPlan(const std::string &contract, uint32_t cpus, uint32_t gpuUnits = 0, uint32_t queuePairs = 0) {
  plan::Plan p;
  p.mutable_provenance()->set_contract(contract);
  p.mutable_borrow()->set_cpu_cores(cpus);
  p.mutable_borrow()->set_gpu_sm_slices(gpuUnits);
  p.mutable_borrow()->set_rdma_queue_pairs(queuePairs);
  return p;
}

bool eventually(const std::function<bool()> &holds) {
  for (auto end = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(1ms))
    if (holds())
      return true;
  return holds();
}

class NodeLendingTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string error;
    page_ = worker::ControlPageHost::create(error);
    ASSERT_TRUE(page_) << error;
  }
  void enter(unsigned phase) {
    mscale::worker::ControlPage *p = page_->page();
    p->phase.store(phase, std::memory_order_release);
    p->phaseEntries.fetch_add(1, std::memory_order_acq_rel);
  }

  Logger log_{"node-lending-test", false};
  std::unique_ptr<worker::ControlPageHost> page_;
};

TEST_F(NodeLendingTest, ABorrowerIsAdmittedOnlyAgainstWhatTheOwnersCouldLend) {
  NodeLending lending(log_, /*simulated=*/true, "");
  std::string error;
  EXPECT_FALSE(lending.addBorrower(borrowerPlan("prep", 2), error));
  EXPECT_EQ(error, "it asks for 2 CPUs; the contracts here lend at most 0 (none lends)");
  ASSERT_TRUE(lending.addOwner(ownerPlan(), *page_, error)) << error;
  EXPECT_FALSE(lending.addOwner(ownerPlan(), *page_, error));
  EXPECT_EQ(error, "it lends on this node already");
  EXPECT_FALSE(lending.addBorrower(borrowerPlan("big", 7), error));
  EXPECT_EQ(error, "it asks for 7 CPUs; the contracts here lend at most 6");
  EXPECT_FALSE(lending.addBorrower(borrowerPlan("none", 0), error));
  EXPECT_EQ(error, "it asks for no CPU (cpu_cores): a borrower runs on lent CPUs");
  EXPECT_FALSE(lending.addBorrower(borrowerPlan("gpu", 1, 2), error));
  EXPECT_EQ(error, "it asks for 2 GPU units on one GPU; the contracts here lend at most 0");
  ASSERT_TRUE(lending.addBorrower(borrowerPlan("prep", 4), error)) << error;
  EXPECT_FALSE(lending.addBorrower(borrowerPlan("prep", 4), error));
  EXPECT_EQ(error, "it borrows on this node already");
  EXPECT_STREQ(lending.mechanism(), "sim");
  EXPECT_TRUE(lending.lends("train"));
  EXPECT_TRUE(lending.borrows("prep"));
  EXPECT_TRUE(lending.frozen("prep")) << "nothing is lent before the owner's first phase";
  std::optional<LendingView> v = lending.view("train");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->phase, "");
  EXPECT_TRUE(v->loans.empty());
  EXPECT_EQ(v->reclaimWithinNs, 2'000'000u);
  EXPECT_FALSE(lending.view("other"));
}

TEST_F(NodeLendingTest, LoansFollowTheOwnersPhasesAndComeBackWhenItLeaves) {
  NodeLending lending(log_, /*simulated=*/true, "");
  std::string error;
  ASSERT_TRUE(lending.addOwner(ownerPlan(), *page_, error)) << error;
  ASSERT_TRUE(lending.addBorrower(borrowerPlan("prep", 4), error)) << error;

  // Computing, it keeps the trainer's CPUs: four of the loader's are lent.
  enter(2);
  ASSERT_TRUE(eventually([&] { return !lending.frozen("prep"); })) << "nothing was lent in compute";
  std::optional<LendingView> owner = lending.view("train");
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->phase, "compute");
  ASSERT_EQ(owner->loans.size(), 1u);
  EXPECT_EQ(owner->loans[0].borrower, "prep");
  EXPECT_EQ(owner->loans[0].cpus, (lending::CpuSet{0, 1, 2, 3}));
  std::optional<LendingView> borrower = lending.view("prep");
  ASSERT_TRUE(borrower);
  EXPECT_TRUE(borrower->borrower);
  EXPECT_FALSE(borrower->frozen);
  EXPECT_FALSE(borrower->cpuTimeNs) << "a simulated host has no cgroup to count it";

  // Decoding, it keeps the loader's: the borrower moves to the trainer's two.
  enter(1);
  ASSERT_TRUE(eventually([&] {
    std::vector<lending::Loan> loans = lending.loans();
    return loans.size() == 1 && loans[0].cpus == lending::CpuSet{4, 5};
  }));
  ASSERT_TRUE(eventually([&] { return lending.view("train")->reclaims.entries == 2; }));
  EXPECT_EQ(lending.view("train")->phase, "decode");

  lending.remove("train");
  EXPECT_FALSE(lending.lends("train"));
  EXPECT_TRUE(eventually([&] { return lending.loans().empty() && lending.frozen("prep"); }))
      << "the CPUs of an owner that left stay lent";
  lending.remove("prep");
  EXPECT_FALSE(lending.borrows("prep"));
  EXPECT_FALSE(lending.view("prep"));
}

// The trainer's queue-pair group (4 on mlx5_0 port 1, compute keeps `rdma`): 3 are lent while it
// decodes, to a borrower admitted against that, and the group is whole again when compute begins.
TEST_F(NodeLendingTest, QueuePairsAreAdmittedAgainstOnePortAndLentThroughTheOwnersBackend) {
  NodeLending lending(log_, /*simulated=*/true, "");
  plan::Plan owner = ownerPlan();
  plan::RdmaSetting *grads = owner.add_rdma();
  grads->set_role("trainer");
  grads->set_device("mlx5_0");
  grads->set_port(1);
  grads->set_queue_pairs(4);
  grads->set_max_outstanding(32);
  owner.mutable_lending()->mutable_phases(1)->mutable_uses(0)->add_exclusive("rdma");
  SimRdmaBackend backend({{"mlx5_0", 1, true, "InfiniBand"}});
  std::string error;
  std::optional<QpGroupId> group = backend.createQueuePairs(*grads, error);
  ASSERT_TRUE(group) << error;
  OwnerDevices devices;
  devices.rdmaBackend = &backend;
  devices.qpGroups = {{0, *group}};
  ASSERT_TRUE(lending.addOwner(owner, *page_, error, devices)) << error;
  EXPECT_EQ(lending.most().rdmaQueuePairs, 3u) << "a group keeps one of its queue pairs";
  EXPECT_FALSE(lending.addBorrower(borrowerPlan("greedy", 1, 0, 4), error));
  EXPECT_EQ(error, "it asks for 4 RDMA queue pairs on one port; the contracts here lend at most 3");
  ASSERT_TRUE(lending.addBorrower(borrowerPlan("prep", 1, 0, 3), error)) << error;

  enter(1); // decode keeps no queue pair
  ASSERT_TRUE(eventually([&] {
    std::vector<lending::Loan> loans = lending.loans();
    return loans.size() == 1 && loans[0].shares[lending::kRdmaShare].units == 3;
  })) << "nothing lent in decode";
  EXPECT_EQ(lending.loans()[0].rdmaPort, "mlx5_0:1");
  EXPECT_EQ(backend.group(*group)->queuePairs, 1u);
  EXPECT_EQ(backend.liveGroups(), 2u);
  // What the agent publishes of it: the queue pairs lendable and lent now, and their unit-time.
  ASSERT_TRUE(eventually([&] { return lending.offer().lendableUnitNs[lending::kRdmaShare] > 0; }));
  LendingOffer offer = lending.offer();
  EXPECT_EQ(offer.rdmaQueuePairs, 3u);
  EXPECT_EQ(offer.lendableUnits[lending::kRdmaShare], 3u);
  EXPECT_EQ(offer.lentUnits[lending::kRdmaShare], 3u);
  EXPECT_EQ(offer.lendableUnits[lending::kGpuShare], 0u);
  enter(2); // compute keeps them: the borrower has no worker to tell, so it lets go at once
  ASSERT_TRUE(eventually([&] { return backend.liveGroups() == 1; }));
  EXPECT_EQ(backend.group(*group)->queuePairs, 4u);
  EXPECT_GT(lending.lentUnitNs(lending::kRdmaShare), 0u);
  lending.remove("prep");
  lending.remove("train");
}

TEST_F(NodeLendingTest, AStandbysPageIsFollowedFromTheTakeOverOn) {
  NodeLending lending(log_, /*simulated=*/true, "");
  std::string error;
  ASSERT_TRUE(lending.addOwner(ownerPlan(), *page_, error)) << error;
  ASSERT_TRUE(lending.addBorrower(borrowerPlan("prep", 2), error)) << error;
  enter(2); // compute keeps the trainer's: the loader's four lendable, two asked
  ASSERT_TRUE(eventually([&] { return !lending.frozen("prep"); }));

  std::unique_ptr<worker::ControlPageHost> standby = worker::ControlPageHost::create(error);
  ASSERT_TRUE(standby) << error;
  lending.followPage("train", *standby);
  // The new worker has entered no phase yet: it keeps everything.
  EXPECT_TRUE(eventually([&] { return lending.frozen("prep"); })) << "lent to a worker that has not said its phase";
  page_.reset(); // the old page is gone: the lending must not read it any more
  mscale::worker::ControlPage *p = standby->page();
  p->phase.store(2, std::memory_order_release);
  p->phaseEntries.fetch_add(1, std::memory_order_acq_rel);
  EXPECT_TRUE(eventually([&] { return !lending.frozen("prep"); }));
  EXPECT_EQ(lending.view("train")->phase, "compute");
}

// A take-back the mechanism refuses falls back to freezing the borrower, and the agent's log says
// so with WRN_EXEC_004: the owner has its CPUs either way.
TEST_F(NodeLendingTest, ATakeBackThatFailsIsLoggedWithTheFallbackTaken) {
  std::string path = ::testing::TempDir() + "node-lending-" + std::to_string(::getpid()) + ".log";
  std::string error;
  {
    Logger log("node-lending-test", false);
    ASSERT_TRUE(log.openFile(path, error)) << error;
    NodeLending lending(log, /*simulated=*/true, "");
    ASSERT_TRUE(lending.addOwner(ownerPlan(), *page_, error)) << error;
    ASSERT_TRUE(lending.addBorrower(borrowerPlan("prep", 2), error)) << error;
    enter(2); // compute: the loader's 0-3 lendable, the borrower on 0,1
    ASSERT_TRUE(eventually([&] { return !lending.loans().empty() && lending.loans()[0].cpus == lending::CpuSet{0, 1}; }));
    ASSERT_TRUE(lending.withSimLoans([](lending::SimLoans &s) { s.failShrinks("prep", true); }));
    enter(1); // decode keeps 0-3: the borrower would move to 4,5, and the move is refused
    EXPECT_TRUE(eventually([&] { return lending.frozen("prep"); }));
    EXPECT_TRUE(eventually([&] { return lending.loans().empty(); })) << "the loader's CPUs are still lent";
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path.c_str());
  EXPECT_NE(text.str().find("warning[WRN_EXEC_004]: lending: borrower 'prep' on CPUs [4-5]: sim: the cpuset of "
                            "borrower 'prep' refused 2 CPUs; frozen instead"),
            std::string::npos)
      << text.str();
}

uint64_t monotonicNowNs() { return SystemClock::instance().monotonicNs(); }

// A borrower's worker that cooperates is asked on its own control page, and frozen once it yields:
// the borrower's side here is a thread doing what mscale.wait_for_yield_request() and yield_now() do.
TEST_F(NodeLendingTest, ABorrowersWorkerIsAskedToYieldOnItsOwnPage) {
  NodeLending lending(log_, /*simulated=*/true, "");
  std::string error;
  plan::Plan owner = ownerPlan();
  owner.mutable_lending()->set_reclaim_within_ns(400'000'000); // time enough for a thread on a busy machine
  plan::Phase::Use *loader = owner.mutable_lending()->mutable_phases(1)->add_uses();
  loader->set_role("loader"); // compute keeps every CPU: the borrower has nowhere to move, and is frozen
  loader->add_exclusive("cpu");
  ASSERT_TRUE(lending.addOwner(owner, *page_, error)) << error;
  ASSERT_TRUE(lending.addBorrower(borrowerPlan("prep", 2), error)) << error;
  std::unique_ptr<worker::ControlPageHost> borrowerPage = worker::ControlPageHost::create(error);
  ASSERT_TRUE(borrowerPage) << error;
  mscale::worker::ControlPage *bp = borrowerPage->page();
  bp->cooperates.store(1);
  lending.followPage("prep", *borrowerPage);

  enter(1); // decode keeps the loader's 0-3: the trainer's 4,5 are lent
  ASSERT_TRUE(eventually([&] { return !lending.frozen("prep"); }));
  uint64_t askedLeftNs = 0;
  std::thread borrower([&] {
    for (auto end = std::chrono::steady_clock::now() + 10s;
         !bp->yieldAsk.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < end;)
      std::this_thread::sleep_for(100us);
    if (!bp->yieldAsk.load())
      return;
    uint64_t by = bp->yieldByNs.load(), now = monotonicNowNs();
    askedLeftNs = by > now ? by - now : 0;
    bp->yieldAck.store(bp->yieldAsk.load(), std::memory_order_release);
  });
  page_->page()->phaseEnteredNs.store(monotonicNowNs());
  enter(2); // compute keeps 4,5
  borrower.join();
  EXPECT_GT(askedLeftNs, 0u);
  EXPECT_LE(askedLeftNs, 200'000'000u) << "at most what is left of the bound, less half of it for the freeze";
  EXPECT_TRUE(eventually([&] { return lending.frozen("prep"); }));
  EXPECT_EQ(lending.yieldStats().asked, 1u);
  EXPECT_EQ(lending.yieldStats().yielded, 1u);
  EXPECT_NE(bp->yieldAsk.load(), 0u) << "still asked while frozen";
  page_->page()->phaseEnteredNs.store(monotonicNowNs());
  enter(1);
  EXPECT_TRUE(eventually([&] { return !lending.frozen("prep") && bp->yieldAsk.load() == 0; }))
      << "lent again: the ask withdrawn";
  lending.remove("prep"); // its page is unmapped after the loop forgot it
  EXPECT_FALSE(lending.borrows("prep"));
}

TEST_F(NodeLendingTest, AnOwnersFaultTakesEverythingBackBeforeRecoveryStarts) {
  NodeLending lending(log_, /*simulated=*/true, "");
  std::string error;
  ASSERT_TRUE(lending.addOwner(ownerPlan(), *page_, error)) << error;
  ASSERT_TRUE(lending.addBorrower(borrowerPlan("prep", 2), error)) << error;
  page_->page()->phaseEnteredNs.store(monotonicNowNs());
  enter(1);
  ASSERT_TRUE(eventually([&] { return !lending.frozen("prep"); }));
  EXPECT_TRUE(lending.holdForRecovery("train"));
  EXPECT_TRUE(lending.frozen("prep")) << "back when holdForRecovery returns";
  EXPECT_TRUE(lending.loans().empty());
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(lending.frozen("prep")) << "the dead worker's phase on its page lends nothing";
  page_->page()->phaseEnteredNs.store(monotonicNowNs()); // the next worker decodes
  enter(1);
  EXPECT_TRUE(eventually([&] { return !lending.frozen("prep"); }));
  EXPECT_TRUE(lending.holdForRecovery("other")) << "nothing to take back for a contract that lends nothing";
}

} // namespace
} // namespace msc::exec
