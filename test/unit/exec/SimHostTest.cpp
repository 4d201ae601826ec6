// host_backend: sim on this machine: a plan compiled for the recorded JUWELS Booster node (48 cores,
// 4 x A100, no free hugepages) is applied with the sim host, GPU and RDMA backends. The worker sees
// the recorded CPUs and a pool fd of the plan's size, no cgroup is made, a failing applier leaves no
// fd behind, and the worker is supervised (restarted, its children killed) as under the real host.
// No root needed: nothing of the host is touched.
#include "ExecTestUtil.h"

#include "executor/ProcessTree.h"
#include "executor/Session.h"
#include "executor/Supervisor.h"
#include "executor/host/Sys.h"
#include "plan/PlanFile.h"
#include "worker/WorkerApi.h"

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

using namespace msc;
using namespace msc::exec;
using namespace msc::exec::test;

namespace {

const char *const kRecordedNode = "hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml";

std::string fixture() { return std::string(MSC_SOURCE_DIR) + "/../shared/fixtures/topologies/" + kRecordedNode; }

// A loader on NUMA node 3's cores 18-21 of the recorded node (this machine has two) with a 16 x 2 MiB
// pool, GPU 0 beside it and that GPU's RDMA port.
std::string contractText(const std::string &name) {
  return "contract " + name +
         " {\n"
         "  auto_allocate_hugepages = true;\n"
         "  io_topology {\n"
         "    loader { cpu_cores = [18, 19, 20, 21]; numa_node = 3; io_depth = 32;\n"
         "             memory_pool = hugepages(2MiB, count = 16); }\n"
         "    vision { gpu = 0000:03:00.0; }\n"
         "    cache  { rdma_port = \"mlx5_0:1\"; }\n"
         "  }\n"
         "}\n";
}

bool alive(pid_t pid) {
  std::optional<std::string> stat = readFileText("/proc/" + std::to_string(pid) + "/stat");
  return stat && llvm::StringRef(*stat).rsplit(')').second.ltrim().front() != 'Z';
}

class SimHost : public ::testing::Test {
protected:
  // Runs a supervisor over `s` to its end with the signals it waits for blocked, as mscale-exec does;
  // its exit code.
  int runSupervised(Session &s, SupervisorOptions o, DiagnosticEngine &diags) {
    sigset_t sigs, old;
    sigemptyset(&sigs);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD})
      sigaddset(&sigs, sig);
    ::sigprocmask(SIG_BLOCK, &sigs, &old);
    int code;
    {
      Supervisor supervisor(s, log_, std::move(o));
      code = supervisor.run(sigs, diags);
    }
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    return code;
  }

  void SetUp() override {
    if (!pathExists(fixture()))
      GTEST_SKIP() << "no recorded topologies next to the repository (../shared/fixtures)";
    char tmpl[] = "/tmp/msc-simhost-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    contract_ = "gtest_simhost_" + std::to_string(::getpid());
    std::string source = dir_ + "/simhost.msc", planFile = dir_ + "/simhost.msp";
    std::ofstream(source) << contractText(contract_);
    std::string compile = std::string(MSC_MSCALEC) + " --topology " + fixture() + " -o " + planFile + " " + source +
                          " 2>" + dir_ + "/mscalec.err";
    ASSERT_EQ(std::system(compile.c_str()), 0) << readFileText(dir_ + "/mscalec.err").value_or("");
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    std::optional<plan::Plan> p = plan::readPlanFile(planFile, diags);
    ASSERT_TRUE(p);
    plan_ = *p;
    std::optional<hal::Topology> recorded = hal::loadTopology(hal::TopologySource::file(fixture()), diags);
    ASSERT_TRUE(recorded);
    options_.topology = std::make_shared<const hal::Topology>(std::move(*recorded));
    options_.appliers.cgroups = CgroupLayout::discover(); // there to be ignored
    options_.config.hostBackend = HostBackend::Sim;
    options_.config.gpuBackend = "sim";
    options_.config.rdmaBackend = "sim";
  }
  void TearDown() override {
    if (!dir_.empty())
      std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  // Every directory a real host backend would make for the contract, in any hierarchy mounted here.
  std::vector<std::string> contractCgroups() const {
    std::vector<std::string> out;
    const CgroupLayout &l = options_.appliers.cgroups;
    if (!l.v2Mount.empty() && pathExists(l.v2Dir(contract_)))
      out.push_back(l.v2Dir(contract_));
    for (const auto &[controller, mount] : l.v1Mounts)
      if (pathExists(mount + "/mscale/" + contract_))
        out.push_back(mount + "/mscale/" + contract_);
    return out;
  }

  std::string variable(const Session &s, const std::string &name) const {
    auto it = s.environment().variables.find(name);
    return it == s.environment().variables.end() ? std::string("(unset)") : it->second;
  }

  std::string dir_, contract_;
  plan::Plan plan_;
  SessionOptions options_;
  Logger log_{"test", false};
};

} // namespace

TEST_F(SimHost, RecordedPlanIsAppliedWithTheRecordedCpusAndAnOrdinaryPoolAndNoCgroup) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  size_t fdsBefore = countOpenFds();
  {
    Session s(plan_, contract_, "simhost.msp", log_, options_);
    ASSERT_TRUE(s.apply(diags)) << (sink.diags.empty() ? "" : sink.diags[0].message);
    EXPECT_EQ(variable(s, "MSCALE_CONTRACT"), contract_);
    EXPECT_EQ(variable(s, "MSCALE_CPUS"), "18-21");
    EXPECT_EQ(variable(s, "MSCALE_ROLES"), "loader");
    EXPECT_EQ(variable(s, "MSCALE_ROLE_LOADER_CPUS"), "18-21");
    EXPECT_EQ(variable(s, "MSCALE_ROLE_LOADER_IO_DEPTH"), "32");
    EXPECT_EQ(variable(s, "MSCALE_CGROUP"), "(unset)");
    EXPECT_EQ(variable(s, "MSCALE_POOL_LOADER_BYTES"), std::to_string(16u << 21));
    EXPECT_EQ(variable(s, "MSCALE_POOL_LOADER_PAGE_SIZE"), std::to_string(::sysconf(_SC_PAGESIZE)));
    EXPECT_EQ(s.cgroupV2(), "");
    EXPECT_TRUE(contractCgroups().empty());

    // The pool: a memfd of the plan's size on an ordinary file system (not hugetlbfs).
    int fd = std::atoi(variable(s, "MSCALE_POOL_LOADER_FD").c_str());
    ASSERT_EQ(s.environment().inheritedFds, std::vector<int>{fd});
    struct stat st {};
    ASSERT_EQ(::fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, off_t(16) << 21);
    struct statfs fs {};
    ASSERT_EQ(::fstatfs(fd, &fs), 0);
    EXPECT_NE(fs.f_type, static_cast<decltype(fs.f_type)>(HUGETLBFS_MAGIC));

    // What contract status shows says sim on every host line.
    for (const auto &[applier, lines] : s.resources()) {
      if (applier != "cpu" && applier != "io" && applier != "memory")
        continue;
      EXPECT_FALSE(lines.empty()) << applier;
      for (const std::string &line : lines) {
        if (line.rfind("role ", 0) == 0 && applier == "cpu")
          continue; // the role's own CPUs, listed as the real applier lists them
        EXPECT_NE(line.find("sim"), std::string::npos) << applier << ": " << line;
      }
    }

    // The worker: the variables, its pool mapped and written, and no cgroup of the contract.
    std::string out = dir_ + "/worker.out";
    std::string worker = MSC_EXEC_TEST_WORKER;
    ASSERT_TRUE(s.startWorker({"/bin/sh", "-c",
                               worker + " env MSCALE_ > " + out + " && " + worker + " pool loader >> " + out +
                                   " && " + worker + " cgroup >> " + out},
                              {}, diags));
    pid_t pid = s.workerPid();
    EXPECT_TRUE(contractCgroups().empty());
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    s.workerExited();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << readFileText(out).value_or("");
    std::string seen = readFileText(out).value_or("");
    EXPECT_NE(seen.find("MSCALE_CPUS=18-21\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("MSCALE_ROLE_LOADER_CPUS=18-21\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("MSCALE_POOL_LOADER_FD=" + std::to_string(fd) + "\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("pool loader mapped 33554432 bytes\n"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("MSCALE_CGROUP"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("/mscale/"), std::string::npos) << seen;
    s.release(diags);
    EXPECT_TRUE(s.resources().empty());
  }
  EXPECT_EQ(countOpenFds(), fdsBefore);
  EXPECT_TRUE(contractCgroups().empty());
}

class SimHostRollback : public SimHost, public ::testing::WithParamInterface<const char *> {};

TEST_P(SimHostRollback, InjectedFailureClosesWhatWasOpened) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  options_.inject.failIn = GetParam();
  size_t fdsBefore = countOpenFds();
  {
    Session s(plan_, contract_, "simhost.msp", log_, options_);
    EXPECT_FALSE(s.apply(diags));
    EXPECT_FALSE(s.applied());
    EXPECT_TRUE(s.environment().inheritedFds.empty());
  }
  // The GPU applier reports its injected failure as a slice that cannot be made.
  DiagCode expected = GetParam() == std::string("gpu") ? DiagCode::ERR_GPU_004 : DiagCode::ERR_EXEC_008;
  ASSERT_FALSE(sink.diags.empty());
  EXPECT_EQ(sink.diags.back().code, expected);
  EXPECT_EQ(countOpenFds(), fdsBefore);
}

// "gpu" fails after the memory applier opened its pool: the pool must be closed in the roll-back.
INSTANTIATE_TEST_SUITE_P(EachApplier, SimHostRollback, ::testing::Values("cpu", "io", "memory", "gpu"));

TEST_F(SimHost, ReleaseKillsWhatTheWorkerStartedWithoutACgroup) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  Session s(plan_, contract_, "simhost.msp", log_, options_);
  ASSERT_TRUE(s.apply(diags));
  std::string pidFile = dir_ + "/child.pid";
  ASSERT_TRUE(s.startWorker({"/bin/sh", "-c", "sleep 60 & echo $! > " + pidFile + ".tmp && mv " + pidFile +
                                                  ".tmp " + pidFile + "; wait"},
                            {}, diags));
  for (int i = 0; i < 500 && !pathExists(pidFile); ++i)
    ::usleep(10000);
  pid_t child = std::atoi(readFileText(pidFile).value_or("0").c_str());
  ASSERT_GT(child, 0);
  EXPECT_EQ(processDescendants(s.workerPid()), std::vector<pid_t>{child});
  s.release(diags);
  for (int i = 0; i < 200 && alive(child); ++i) // init reaps the orphan when it gets to it
    ::usleep(10000);
  EXPECT_FALSE(alive(child));
}

TEST_F(SimHost, WorkerIsRestartedAfterACrashWithTheSameEnvironment) {
  plan_.mutable_fault_tolerance()->set_snapshot_every_steps(10);
  plan_.mutable_fault_tolerance()->set_in_memory_tier(true);
  plan_.mutable_fault_tolerance()->set_heartbeat_ns(50'000'000);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::string logFile = dir_ + "/exec.log", error;
  ASSERT_TRUE(log_.openFile(logFile, error)) << error;
  Session s(plan_, contract_, "simhost.msp", log_, options_);
  ASSERT_TRUE(s.apply(diags));
  SupervisorOptions o;
  o.maxRestarts = 2;
  // The first attempt crashes; every attempt records what it was given.
  o.command = {"/bin/sh", "-c",
               "echo \"$MSCALE_ROLE_LOADER_CPUS $MSCALE_POOL_LOADER_BYTES\" > " + dir_ +
                   "/attempt.$MSCALE_ATTEMPT; if [ $MSCALE_ATTEMPT = 0 ]; then kill -9 $$; fi"};
  int code = runSupervised(s, std::move(o), diags);
  s.release(diags);
  std::string logText = readFileText(logFile).value_or("");
  EXPECT_EQ(code, 0) << logText;
  EXPECT_NE(logText.find("restart 1 of at most 2"), std::string::npos) << logText;
  for (const char *attempt : {"attempt.0", "attempt.1"})
    EXPECT_EQ(readFileText(dir_ + "/" + attempt).value_or(""), "18-21 33554432\n") << attempt;
  EXPECT_TRUE(contractCgroups().empty());
}

// A device fault (here the worker's exit 74: an NVMe I/O error) tells whoever keeps the node's topology
// between calls to discover it anew (the agent's cached live topology); a crash does not.
TEST_F(SimHost, ADeviceFaultMakesTheTopologyBeDiscoveredAnew) {
  plan_.mutable_fault_tolerance()->set_snapshot_every_steps(10);
  plan_.mutable_fault_tolerance()->set_heartbeat_ns(50'000'000);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  Session s(plan_, contract_, "simhost.msp", log_, options_);
  ASSERT_TRUE(s.apply(diags));
  SupervisorOptions o;
  o.maxRestarts = 3;
  // Attempt 0 crashes, attempt 1 meets an I/O error, attempt 2 completes.
  o.command = {"/bin/sh", "-c",
               "case $MSCALE_ATTEMPT in 0) kill -9 $$ ;; 1) exit " + std::to_string(kWorkerExitIoError) +
                   " ;; esac"};
  int deviceFaults = 0;
  o.deviceFailed = [&] { ++deviceFaults; };
  int code = runSupervised(s, std::move(o), diags);
  s.release(diags);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(deviceFaults, 1);
}
