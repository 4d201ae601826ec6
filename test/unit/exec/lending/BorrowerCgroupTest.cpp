// The reclaim mechanisms for real, checked from the borrower's side (/proc, ThreadPlacement.h): an
// adversarial borrower (spinning threads that keep forking spinners) on a lent CPU; its cpuset
// shrinks and none of its threads is runnable on the CPU taken back; frozen, none runs anywhere, the
// forks included; a fork bomb stops at its pids limit; ending it ends the frozen tree. Needs root and
// a cpuset and freezer controller; skipped, saying why, where the kernel has none.
#include "executor/lending/BorrowerCgroup.h"
#include "executor/lending/ThreadPlacement.h"
#include "executor/host/Sys.h"

#include <llvm/ADT/StringRef.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sched.h>
#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace msc::exec::lending {
namespace {

// Burns CPU until killed; an atomic counter keeps the loop from being optimised away.
[[noreturn]] void spin() {
  static std::atomic<uint64_t> sink{0};
  for (;;)
    sink.fetch_add(1, std::memory_order_relaxed);
}

// Spins on two threads and forks a spinner every 20 ms (at most `forks`), all in one tree and one
// process group; it starts once a byte arrives on `go`, so that it is in its cgroup before it forks.
pid_t startSpinners(int forks, int go[2]) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::close(go[1]);
    char byte;
    if (::read(go[0], &byte, 1) != 1)
      ::_exit(1);
    std::thread(spin).detach();
    for (int i = 0; i < forks; ++i) {
      if (::fork() == 0)
        spin();
      ::usleep(20'000);
    }
    spin();
  }
  ::setpgid(pid, pid); // both sides, so that the group exists whichever runs first
  ::close(go[0]);
  return pid;
}

class BorrowerCgroupTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root (cgroups)";
    layout_ = CgroupLayout::discover();
    if (reclaimMechanism(layout_) == ReclaimMechanism::None)
      GTEST_SKIP() << "this kernel has " << mechanismName(ReclaimMechanism::None);
    if (std::thread::hardware_concurrency() < 2)
      GTEST_SKIP() << "needs two CPUs: one lent, one to move to";
  }
  // A failed assertion must not leave spinners behind: they hold the test's output open, and ctest
  // would wait for them. Each tree is one process group (startSpinners); a frozen one dies when its
  // BorrowerCgroup, gone by now, thawed it.
  void TearDown() override {
    for (pid_t root : roots_) {
      ::kill(-root, SIGKILL);
      ::waitpid(root, nullptr, 0);
    }
  }
  // Spinners started inside `b`.
  pid_t spinnersIn(BorrowerCgroup &b, int forks) {
    int go[2];
    if (::pipe(go) != 0)
      return -1;
    pid_t root = roots_.emplace_back(startSpinners(forks, go));
    std::string error;
    EXPECT_TRUE(b.join(root, error)) << error;
    EXPECT_EQ(::write(go[1], "g", 1), 1);
    ::close(go[1]);
    return root;
  }
  CgroupLayout layout_;
  std::vector<pid_t> roots_;
};

TEST_F(BorrowerCgroupTest, ShrinkingAndFreezingLeaveNoThreadRunnableOnTheCpusTakenBack) {
  std::string error;
  std::optional<BorrowerCgroup> b = BorrowerCgroup::create(layout_, "unit-spinner", {}, error);
  ASSERT_TRUE(b) << error;
  EXPECT_TRUE(b->frozen()) << "a borrower runs nothing until something is lent";
  pid_t root = spinnersIn(*b, 6);
  ASSERT_TRUE(b->setCpus({0, 1}, error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(150)); // it forks meanwhile
  std::vector<ThreadSeen> seen = threadsOf(processTree(root));
  EXPECT_GE(seen.size(), 4u);
  EXPECT_FALSE(runnableOn(seen, {1}).empty()) << "spinning on both lent CPUs";

  // CPU 1 taken back: the write returns once the kernel moved every task off it.
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(b->setCpus({0}, error)) << error;
  auto shrink = std::chrono::steady_clock::now() - start;
  seen = threadsOf(processTree(root));
  EXPECT_TRUE(runnableOn(seen, {1}).empty()) << "a borrower thread is runnable on CPU 1 after its reclaim";
  EXPECT_FALSE(runnableOn(seen, {0}).empty());

  // Everything taken back: frozen, the forks too, and nothing runnable anywhere.
  start = std::chrono::steady_clock::now();
  ASSERT_TRUE(b->setCpus({}, error)) << error;
  ASSERT_TRUE(b->waitSettled(error)) << error;
  auto freeze = std::chrono::steady_clock::now() - start;
  std::this_thread::sleep_for(std::chrono::milliseconds(60)); // a fork would have come by now
  seen = threadsOf(processTree(root));
  EXPECT_TRUE(runnableOn(seen, {0, 1}).empty());
  size_t frozenCount = seen.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(threadsOf(processTree(root)).size(), frozenCount) << "a frozen borrower forked";
  RecordProperty("shrink_us", std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(shrink).count()));
  RecordProperty("freeze_us", std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(freeze).count()));

  // Lent again, it runs again; ended, the whole frozen tree is gone.
  ASSERT_TRUE(b->setCpus({1}, error)) << error;
  EXPECT_FALSE(b->frozen());
  b->setCpus({}, error);
  b->end();
  int status = 0;
  EXPECT_EQ(::waitpid(root, &status, 0), root);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  for (int i = 0; i < 100 && !b->procs().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(b->procs().empty());
}

// A borrower is frozen when an owner takes every CPU back, and its threads are then queued behind
// the owner's busy threads. A freeze completes only once each has run again, which an idle-class
// task waits for up to a second; so it freezes at the default weight, and is idle again once frozen.
TEST_F(BorrowerCgroupTest, AFreezeBehindBusyOwnerThreadsCompletesPromptlyAndLeavesItIdle) {
  std::string error;
  std::optional<BorrowerCgroup> b = BorrowerCgroup::create(layout_, "unit-busy-owner", {}, error);
  ASSERT_TRUE(b) << error;
  pid_t root = spinnersIn(*b, 4);
  ASSERT_TRUE(b->setCpus({0, 1}, error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(120)); // its forks are made
  // The owner: a busy thread of ordinary priority on each CPU.
  for (unsigned cpu : {0u, 1u}) {
    pid_t owner = ::fork();
    if (owner == 0) {
      ::setpgid(0, 0);
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      ::sched_setaffinity(0, sizeof set, &set);
      spin();
    }
    ::setpgid(owner, owner);
    roots_.push_back(owner);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(b->setCpus({}, error)) << error;
  // Whether the node's own bound (200 ms) holds is the lending benchmark's to measure: on a noisy
  // two-vCPU machine the kernel has taken 156 ms, and longer beside another test. What this test
  // tells apart is a freeze at the default weight (milliseconds, as a rule) from one queued at the
  // idle class behind the owner (up to a second): it keeps asking past the bound, up to 500 ms.
  BorrowerCgroup::Settle settled = BorrowerCgroup::Settle::Pending;
  while ((settled = b->settle(error)) != BorrowerCgroup::Settle::Done &&
         std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500))
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  auto freeze = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(settled, BorrowerCgroup::Settle::Done) << "queued behind the owner, the freeze waited: " << error;
  EXPECT_TRUE(runnableOn(threadsOf(processTree(root)), {0, 1}).empty());
  RecordProperty("freeze_behind_owner_us",
                 std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(freeze).count()));
  // Idle again, read from the kernel's own file where the node has cpu.idle.
  std::string cpuMount = layout_.onV2("cpu") ? layout_.v2Mount
                         : layout_.v1Mounts.count("cpu") ? layout_.v1Mounts.at("cpu") : std::string();
  std::optional<std::string> idle =
      cpuMount.empty() ? std::nullopt : readFileText(cpuMount + "/mscale-borrowers/unit-busy-owner/cpu.idle");
  if (idle) {
    EXPECT_EQ(llvm::StringRef(*idle).trim(), "1") << "frozen, it is to be idle again for when it thaws";
  }
  ASSERT_TRUE(b->setCpus({1}, error)) << error;
  if (idle = readFileText(cpuMount + "/mscale-borrowers/unit-busy-owner/cpu.idle"); idle) {
    EXPECT_EQ(llvm::StringRef(*idle).trim(), "1") << "thawed, it runs idle";
  }
}

// IO throttles land in the kernel's own files (read back, not taken from the cgroup's word) on the
// disk of a partition, and are lifted when no longer named; a device the node lacks is refused.
TEST_F(BorrowerCgroupTest, IoThrottlesAreWrittenForTheDiskAndLifted) {
  std::string disk;
  for (const char *d : {"vda", "sda", "nvme0n1", "xvda"})
    if (pathExists(std::string("/sys/class/block/") + d + "/dev")) {
      disk = d;
      break;
    }
  if (disk.empty())
    GTEST_SKIP() << "no block device this test knows (vda, sda, nvme0n1, xvda)";
  std::string error;
  std::optional<BorrowerCgroup> b = BorrowerCgroup::create(layout_, "unit-io", {}, error);
  ASSERT_TRUE(b) << error;
  std::string id = llvm::StringRef(*readFileText("/sys/class/block/" + disk + "/dev")).trim().str();
  bool v2 = reclaimMechanism(layout_) == ReclaimMechanism::CgroupV2;
  std::string mount = v2 ? layout_.v2Mount : layout_.v1Mounts.count("blkio") ? layout_.v1Mounts.at("blkio") : "";
  if (mount.empty() || (v2 && !layout_.onV2("io")))
    GTEST_SKIP() << "no io or blkio controller";
  std::string file = mount + "/mscale-borrowers/unit-io/" + (v2 ? "io.max" : "blkio.throttle.read_bps_device");
  ASSERT_TRUE(b->throttleIo({disk}, error)) << error;
  std::optional<std::string> rules = readFileText(file);
  ASSERT_TRUE(rules);
  EXPECT_NE(rules->find(id + (v2 ? " rbps=" : " ") + std::to_string(kThrottledBps)), std::string::npos) << *rules;
  ASSERT_TRUE(b->throttleIo({}, error)) << error;
  rules = readFileText(file);
  EXPECT_EQ(rules->find(id + (v2 ? " rbps=" : " ") + std::to_string(kThrottledBps)), std::string::npos)
      << "lifted: " << *rules;
  EXPECT_FALSE(b->throttleIo({"no-such-disk"}, error));
  EXPECT_EQ(error, "no block device 'no-such-disk' on this node");
  EXPECT_TRUE(b->throttled().empty()) << "a refused throttle changes nothing";
}

TEST_F(BorrowerCgroupTest, AForkBombStopsAtItsPidsLimit) {
  if (reclaimMechanism(layout_) == ReclaimMechanism::CgroupV1 && !layout_.v1Mounts.count("pids"))
    GTEST_SKIP() << "no pids controller";
  std::string error;
  std::optional<BorrowerCgroup> b = BorrowerCgroup::create(layout_, "unit-forkbomb", {0, 16}, error);
  ASSERT_TRUE(b) << error;
  pid_t root = spinnersIn(*b, 100);
  ASSERT_TRUE(b->setCpus({0}, error)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_LE(b->procs().size(), 16u);
  b->end();
  ::waitpid(root, nullptr, 0);
}

// Two lendings on one node (an agent and a benchmark) keep the v1 freezer's key on each with its own
// cgroup: one that ends thaws only its own; one left by a process that died is removed by the next.
TEST_F(BorrowerCgroupTest, FreezerKeepAlivesAreEachTheirOwn) {
  if (reclaimMechanism(layout_) != ReclaimMechanism::CgroupV1)
    GTEST_SKIP() << "the v1 freezer only: cgroup2 has no static key to keep on";
  std::string parent = layout_.v1Mounts.at("freezer") + "/mscale-borrowers";
  auto keptOn = [&] {
    std::vector<std::string> frozen;
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator(parent, ec))
      if (entry.path().filename().string().rfind("freezer-kept-on.", 0) == 0)
        if (std::optional<std::string> state = readFileText(entry.path().string() + "/freezer.state"))
          frozen.push_back(entry.path().filename().string() + " " + llvm::StringRef(*state).trim().str());
    std::sort(frozen.begin(), frozen.end());
    return frozen;
  };
  std::vector<std::string> before = keptOn();
  // One a process that died left: a pid that cannot exist.
  std::string stale = parent + "/freezer-kept-on.4194304.0", error;
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0) << std::strerror(errno);
  std::unique_ptr<FreezerKeepAlive> first = FreezerKeepAlive::create(layout_);
  std::unique_ptr<FreezerKeepAlive> second = FreezerKeepAlive::create(layout_);
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(std::filesystem::exists(stale)) << "the dead process's is removed";
  EXPECT_EQ(keptOn().size(), before.size() + 2);
  first.reset();
  std::vector<std::string> after = keptOn();
  ASSERT_EQ(after.size(), before.size() + 1);
  EXPECT_TRUE(std::any_of(after.begin(), after.end(), [&](const std::string &s) {
    return s.find("." + std::to_string(::getpid()) + ".") != std::string::npos && s.ends_with(" FROZEN");
  })) << "the second is still frozen after the first ended";
  second.reset();
  EXPECT_EQ(keptOn(), before);
}

} // namespace
} // namespace msc::exec::lending
