// The lending loop's wiring, for real: an owner process enters phases through the worker's C ABI on
// its control page (stores and, where the node asks, a futex wake), the loop runs LendingNode on the
// system clock over CgroupLoans, and an adversarial borrower (spinners that fork) runs in its cgroup.
// What is checked is read from the borrower's side (ThreadPlacement.h). The poll interval is a
// minute, so that only the owner's futex wake can make the loop take CPU 1 back in time: the test
// proves the wake reaches the loop, not how fast it is (bench/lending measures that). Needs root and
// a cpuset and freezer controller; skipped, saying why, where the kernel has none.
#include "executor/lending/CgroupLoans.h"
#include "executor/lending/LendingLoop.h"
#include "executor/lending/ThreadPlacement.h"
#include "support/Clock.h"
#include "worker/ControlPage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace msc::exec::lending {
namespace {

using namespace std::chrono_literals;

[[noreturn]] void spin() {
  static std::atomic<uint64_t> sink{0};
  for (;;)
    sink.fetch_add(1, std::memory_order_relaxed);
}

// The owner's worker: it maps the page as every worker does (MSCALE_CONTROL_FD) and enters the
// phase each byte on `commands` names, acknowledging on `acks`; it ends when `commands` closes.
[[noreturn]] void ownerWorker(int controlFd, int commands, int acks) {
  ::setenv("MSCALE_CONTROL_FD", std::to_string(controlFd).c_str(), 1);
  unsigned char phase = 0;
  while (::read(commands, &phase, 1) == 1) {
    mscale::worker::enterPhase(phase);
    if (::write(acks, &phase, 1) != 1)
      break;
  }
  ::_exit(0);
}

// Two spinning threads that fork a spinner every 20 ms (four at most), in one process group, once
// a byte arrives on `go` (it is in its cgroup by then).
pid_t startBorrower(int go[2]) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::close(go[1]);
    char byte;
    if (::read(go[0], &byte, 1) != 1)
      ::_exit(1);
    std::thread(spin).detach();
    for (int i = 0; i < 4; ++i) {
      if (::fork() == 0)
        spin();
      ::usleep(20'000);
    }
    spin();
  }
  ::setpgid(pid, pid);
  ::close(go[0]);
  return pid;
}

// Whether `holds` becomes true within `limit` (checked every millisecond).
bool eventually(const std::function<bool()> &holds, std::chrono::milliseconds limit = 5000ms) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(1ms))
    if (holds())
      return true;
  return holds();
}

class LendingLoopTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root (cgroups)";
    layout_ = CgroupLayout::discover();
    if (reclaimMechanism(layout_) == ReclaimMechanism::None)
      GTEST_SKIP() << "this kernel has " << mechanismName(ReclaimMechanism::None);
    if (std::thread::hardware_concurrency() < 2)
      GTEST_SKIP() << "needs two CPUs: one kept by a phase, one lent throughout";
    std::string error;
    host_ = msc::worker::ControlPageHost::create(error);
    ASSERT_TRUE(host_) << error;
    // The owner is forked while this process has one thread, before the loop starts.
    int commands[2], acks[2];
    ASSERT_EQ(::pipe(commands), 0);
    ASSERT_EQ(::pipe(acks), 0);
    owner_ = ::fork();
    if (owner_ == 0) {
      ::close(commands[1]);
      ::close(acks[0]);
      ownerWorker(host_->fd(), commands[0], acks[1]);
    }
    ::close(commands[0]);
    ::close(acks[1]);
    commands_ = commands[1];
    acks_ = acks[0];
  }
  // Nothing is left behind when an assertion fails: the borrower's group is killed (its cgroup,
  // gone with `loans_`, thawed it) and the owner's pipe closed.
  void TearDown() override {
    if (borrower_ > 0) {
      ::kill(-borrower_, SIGKILL);
      ::waitpid(borrower_, nullptr, 0);
    }
    if (owner_ > 0) {
      ::close(commands_);
      ::close(acks_);
      ::waitpid(owner_, nullptr, 0);
    }
  }
  void enter(unsigned char phase) {
    ASSERT_EQ(::write(commands_, &phase, 1), 1);
    unsigned char ack = 0;
    ASSERT_EQ(::read(acks_, &ack, 1), 1);
    ASSERT_EQ(ack, phase);
  }
  std::vector<ThreadSeen> borrowerThreads() const { return threadsOf(processTree(borrower_)); }

  CgroupLayout layout_;
  std::unique_ptr<msc::worker::ControlPageHost> host_;
  pid_t owner_ = -1, borrower_ = -1;
  int commands_ = -1, acks_ = -1;
};

TEST_F(LendingLoopTest, AnOwnersPhaseEntryWakesTheLoopAndItsCpuComesBackFromTheBorrower) {
  CgroupLoans loans(layout_);
  std::string error;
  ASSERT_TRUE(loans.add("unit-loop-borrower", {}, error)) << error;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  borrower_ = startBorrower(go);
  ASSERT_TRUE(loans.join("unit-loop-borrower", borrower_, error)) << error;
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);

  // CPUs 0 and 1 are the owner's: compute keeps 1, eval nothing. Reclaim on entry (lead = 0ms), so
  // that the entry, not the rhythm, is what takes CPU 1 back.
  Owner owner;
  owner.contract = "unit-loop-owner";
  owner.cpus = {0, 1};
  owner.phases = {{"compute", {1}}, {"eval", {}}};
  owner.leadAuto = false;
  owner.leadNs = 0;
  SystemClock clock;
  LendingNode node(clock, loans, LendingOptions{60'000'000'000});
  std::vector<std::string> errors;
  LendingLoop loop(node, [&](const std::vector<std::string> &e) { errors.insert(errors.end(), e.begin(), e.end()); });
  mscale::worker::ControlPage *page = host_->page();
  loop.withNode([&](LendingNode &n) { n.addOwner(owner, page); });
  loop.watch({&page->phase});
  loop.start();
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(runnableOn(borrowerThreads(), {0, 1}).empty()) << "nothing is lent before the first phase";

  // Evaluating, the owner keeps nothing: a change on the node (the borrower admitted) lends both.
  enter(2);
  loop.withNode([](LendingNode &n) { n.addBorrower("unit-loop-borrower", 2); });
  EXPECT_TRUE(eventually([&] { return !runnableOn(borrowerThreads(), {1}).empty(); })) << "CPU 1 was never lent";
  EXPECT_TRUE(page->phaseWake.load() & 1u) << "compute keeps a lent CPU: entering it must wake the node";
  uint64_t ticksBefore = loop.ticks();

  // Computing, it keeps CPU 1: only the entry's futex wake can bring the loop round before the
  // minute's poll. The borrower goes on on CPU 0.
  enter(1);
  auto entered = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually([&] { return runnableOn(borrowerThreads(), {1}).empty(); }))
      << "a borrower thread is still runnable on CPU 1, kept by compute";
  auto seen = std::chrono::steady_clock::now() - entered;
  EXPECT_GT(loop.ticks(), ticksBefore);
  EXPECT_FALSE(runnableOn(borrowerThreads(), {0}).empty()) << "CPU 0 is still lent";
  EXPECT_FALSE(page->phaseWake.load() & 1u) << "compute's CPU is home: its entries need no wake";
  uint64_t entries = 0;
  loop.withNode([&](LendingNode &n) { entries = n.ledger().stats("unit-loop-owner").entries; });
  EXPECT_EQ(entries, 1u);
  RecordProperty("entry_to_observed_us", std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(seen).count()));
  RecordProperty("sched_fifo", loop.realtime() ? "yes" : "no");

  // The owner leaves the node: everything comes back, the borrower is frozen.
  loop.withNode([](LendingNode &n) { n.removeOwner("unit-loop-owner"); });
  EXPECT_TRUE(eventually([&] { return runnableOn(borrowerThreads(), {0, 1}).empty(); }))
      << "the borrower still runs on a CPU of an owner that left";
  loop.stop();
  EXPECT_TRUE(errors.empty()) << errors.front();
}

} // namespace
} // namespace msc::exec::lending
