// The appliers for real (root): a plan applied, the worker attached, everything released; and an
// injected failure in each applier in turn leaves no cgroup, hugepage reservation or fd behind.
#include "ExecTestUtil.h"

#include "executor/Session.h"
#include "executor/host/Sys.h"

#include <sys/wait.h>

using namespace msc;
using namespace msc::exec;
using namespace msc::exec::test;

namespace {

struct Snapshot {
  size_t fds;
  uint64_t hugeTotal, hugeFree;
  bool v2, cpuset, blkio;
};

Snapshot snapshot(const CgroupLayout &l, const std::string &contract) {
  Snapshot s;
  s.fds = countOpenFds();
  s.hugeTotal = meminfo("HugePages_Total:");
  s.hugeFree = meminfo("HugePages_Free:");
  s.v2 = !l.v2Mount.empty() && pathExists(l.v2Dir(contract));
  auto v1 = [&](const char *c) {
    auto it = l.v1Mounts.find(c);
    return it != l.v1Mounts.end() && pathExists(it->second + "/mscale/" + contract);
  };
  s.cpuset = v1("cpuset");
  s.blkio = v1("blkio");
  return s;
}

SessionOptions options() {
  SessionOptions o;
  o.appliers.cgroups = CgroupLayout::discover();
  return o;
}

} // namespace

TEST(Appliers, ApplyAttachRelease) {
  MSC_REQUIRE_ROOT();
  std::string contract = "gtest_apply_" + std::to_string(getpid());
  Logger log("test", false);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  SessionOptions o = options();
  Snapshot before = snapshot(o.appliers.cgroups, contract);
  {
    Session s(livePlan(contract, true), contract, "gtest plan", log, o);
    ASSERT_TRUE(s.apply(diags)) << (sink.diags.empty() ? "" : sink.diags[0].message);
    EXPECT_EQ(meminfo("HugePages_Free:"), before.hugeFree); // reserved 2, taken 2 by the pool
    EXPECT_EQ(meminfo("HugePages_Total:"), before.hugeTotal + 2);
    EXPECT_TRUE(pathExists(o.appliers.cgroups.v2Dir(contract)));
    EXPECT_EQ(s.appliedState().cgroup2Dir, o.appliers.cgroups.v2Dir(contract)) << "typed, from the cpu applier";
    EXPECT_EQ(s.environment().variables.at("MSCALE_CGROUP"), s.cgroupV2()) << "and the same for the worker";
    ASSERT_TRUE(s.startWorker({MSC_EXEC_TEST_WORKER, "sleep", "5"}, {}, diags));
    pid_t pid = s.workerPid();
    std::optional<std::string> status = readFileText("/proc/" + std::to_string(pid) + "/status");
    ASSERT_TRUE(status);
    EXPECT_NE(status->find("Cpus_allowed_list:\t0\n"), std::string::npos) << *status;
    std::optional<std::string> cg = readFileText("/proc/" + std::to_string(pid) + "/cgroup");
    EXPECT_NE(cg->find("/mscale/" + contract), std::string::npos) << *cg;
    bool sawData = false;
    for (auto &[applier, lines] : s.resources())
      sawData |= applier == "memory" && !lines.empty();
    EXPECT_TRUE(sawData);
    s.release(diags);
    EXPECT_NE(::kill(pid, 0), 0); // the worker is gone with its contract
    EXPECT_TRUE(s.appliedState().cgroup2Dir.empty());
  }
  Snapshot after = snapshot(o.appliers.cgroups, contract);
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.hugeTotal, before.hugeTotal);
  EXPECT_EQ(after.hugeFree, before.hugeFree);
  EXPECT_FALSE(after.v2);
  EXPECT_FALSE(after.cpuset);
  EXPECT_FALSE(after.blkio);
}

// cpu_weight: read back from the kernel's own file, not from what the applier describes, and the
// worker is in the cgroup that carries it.
TEST(Appliers, CpuWeightIsWrittenWhereTheCpuControllerIsAndTheWorkerRunsUnderIt) {
  MSC_REQUIRE_ROOT();
  std::string contract = "gtest_weight_" + std::to_string(getpid());
  SessionOptions o = options();
  std::optional<std::string> dir = o.appliers.cgroups.dirFor("cpu", contract);
  if (!dir)
    GTEST_SKIP() << "no cpu controller is mounted (v1 or v2) on this kernel";
  bool v2 = o.appliers.cgroups.onV2("cpu");
  Logger log("test", false);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  plan::Plan p = livePlan(contract, false);
  p.set_cpu_weight(300);
  {
    Session s(p, contract, "gtest plan", log, o);
    ASSERT_TRUE(s.apply(diags)) << (sink.diags.empty() ? "" : sink.diags[0].message);
    std::optional<std::string> value = readFileText(*dir + (v2 ? "/cpu.weight" : "/cpu.shares"));
    ASSERT_TRUE(value) << *dir;
    EXPECT_EQ(llvm::StringRef(*value).trim(), v2 ? "300" : "3072") << "v1 shares: 300 x 1024 / 100";
    ASSERT_TRUE(s.startWorker({MSC_EXEC_TEST_WORKER, "sleep", "5"}, {}, diags));
    std::optional<std::string> procs = readFileText(*dir + "/cgroup.procs");
    ASSERT_TRUE(procs);
    EXPECT_NE(procs->find(std::to_string(s.workerPid())), std::string::npos) << *procs;
    s.release(diags);
  }
  EXPECT_FALSE(pathExists(*dir)) << "released with the contract";
}

class RollbackTest : public ::testing::TestWithParam<const char *> {};

TEST_P(RollbackTest, InjectedFailureLeavesNothingBehind) {
  MSC_REQUIRE_ROOT();
  std::string contract = std::string("gtest_rb_") + GetParam() + "_" + std::to_string(getpid());
  Logger log("test", false);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  SessionOptions o = options();
  o.inject.failIn = GetParam();
  Snapshot before = snapshot(o.appliers.cgroups, contract);
  {
    Session s(livePlan(contract, true), contract, "gtest plan", log, o);
    EXPECT_FALSE(s.apply(diags));
    EXPECT_FALSE(s.applied());
    EXPECT_TRUE(s.environment().inheritedFds.empty());
  }
  ASSERT_FALSE(sink.diags.empty());
  EXPECT_EQ(sink.diags.back().code, DiagCode::ERR_EXEC_008);
  Snapshot after = snapshot(o.appliers.cgroups, contract);
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.hugeTotal, before.hugeTotal);
  EXPECT_EQ(after.hugeFree, before.hugeFree);
  EXPECT_FALSE(after.v2);
  EXPECT_FALSE(after.cpuset);
  EXPECT_FALSE(after.blkio);
}

INSTANTIATE_TEST_SUITE_P(EachApplier, RollbackTest, ::testing::Values("cpu", "io", "memory"));

TEST(Appliers, HugepageReservationTheKernelRefusesIsErrExec005) {
  MSC_REQUIRE_ROOT();
  std::string contract = "gtest_huge_" + std::to_string(getpid());
  plan::Plan p = livePlan(contract, true);
  p.mutable_memory_pools(0)->set_page_size(1ull << 30);
  p.mutable_memory_pools(0)->set_pages(100000); // 100000 GiB: never granted
  p.mutable_memory_pools(0)->set_reserve_pages(100000);
  Logger log("test", false);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  SessionOptions o = options();
  uint64_t total = meminfo("HugePages_Total:");
  Session s(p, contract, "gtest plan", log, o);
  EXPECT_FALSE(s.apply(diags));
  ASSERT_FALSE(sink.diags.empty());
  EXPECT_EQ(sink.diags.back().code, DiagCode::ERR_EXEC_005);
  EXPECT_EQ(meminfo("HugePages_Total:"), total);
}

TEST(Appliers, BadContractIdIsErrExec021) {
  Logger log("test", false);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  Session s(livePlan("../escape", false), "../escape", "gtest plan", log, options());
  EXPECT_FALSE(s.apply(diags));
  ASSERT_EQ(sink.diags.size(), 1u);
  EXPECT_EQ(sink.diags[0].code, DiagCode::ERR_EXEC_021);
}

TEST(Appliers, WorkerThatCannotStartIsErrExec009) {
  MSC_REQUIRE_ROOT();
  std::string contract = "gtest_nostart_" + std::to_string(getpid());
  Logger log("test", false);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  Session s(livePlan(contract, false), contract, "gtest plan", log, options());
  ASSERT_TRUE(s.apply(diags));
  EXPECT_FALSE(s.startWorker({"/nonexistent/worker"}, {}, diags));
  ASSERT_FALSE(sink.diags.empty());
  EXPECT_EQ(sink.diags.back().code, DiagCode::ERR_EXEC_009);
  s.release(diags);
}
