// The ranks of one job (mscale-exec run --nproc-per-node N): what each rank is given, how the group
// stops and restarts, and the supervisor treating the group as the job. No root needed: the ranks
// are plain processes (an unapplied session has no cgroups to put them in).
#include "executor/ProcessTree.h"
#include "executor/Session.h"
#include "executor/SessionWorkerHost.h"
#include "executor/Supervisor.h"
#include "executor/WorkerGroup.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace msc;
using namespace msc::exec;

namespace {

// The hung rank's index, for EXPECT_EQ against a rank.
std::optional<unsigned> rankOf(std::optional<Liveness::Hang> hang) {
  return hang ? std::optional<unsigned>(hang->rank) : std::nullopt;
}

// A private directory per test, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/msc-worker-group-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string read(const std::string &name) const {
    std::ifstream in(path + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool has(const std::string &name) const { return ::access((path + "/" + name).c_str(), F_OK) == 0; }
};

// Ranks as plain children: the host of a session that applied nothing (no cgroups to gate them into).
struct PlainHost {
  Logger log{"worker-group-test", /*toStderr=*/false};
  Session session{plan::Plan{}, "group", "group.msp", log, SessionOptions{}};
  SessionWorkerHost host{session};
};

std::vector<std::string> shell(const std::string &script) { return {"/bin/sh", "-c", script}; }

// Waits for every running rank and tells the group, as the supervisor does.
void reapAll(WorkerGroup &group) {
  for (pid_t pid : group.runningPids()) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    group.exited(pid, status);
  }
}

// One worker without the rank environment and without a memory tier, with its control page.
struct SingleWorker {
  TempDir dir;
  PlainHost plain;
  WorkerGroup group{plain.host, 1, /*rankEnvironment=*/false};
  CollectingConsumer sink;
  DiagnosticEngine diags{nullptr, sink};
  SingleWorker() {
    std::vector<std::string> warnings;
    group.prepare(/*memoryTier=*/false, warnings);
  }
};

void waitFor(const TempDir &dir, const std::string &name) {
  for (int i = 0; i < 500 && !dir.has(name); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(dir.has(name)) << name;
}

} // namespace

TEST(WorkerGroup, FreeLoopbackPortIsNotTheOneToAvoid) {
  std::string error;
  std::optional<uint16_t> first = freeLoopbackPort(0, error);
  ASSERT_TRUE(first) << error;
  EXPECT_NE(*first, 0);
  for (int i = 0; i < 20; ++i) {
    std::optional<uint16_t> next = freeLoopbackPort(*first, error);
    ASSERT_TRUE(next) << error;
    EXPECT_NE(*next, *first);
  }
}

TEST(WorkerGroup, EachRankGetsItsOwnPageMemoryTierAndTheRankEnvironment) {
  TempDir dir;
  PlainHost plain;
  WorkerGroup group(plain.host, 3, /*rankEnvironment=*/true);
  std::vector<std::string> warnings;
  group.prepare(/*memoryTier=*/true, warnings);
  EXPECT_TRUE(warnings.empty());
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::string script = "echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MSCALE_RANK $MSCALE_WORLD_SIZE "
                       "$MASTER_ADDR $MASTER_PORT $MSCALE_CONTROL_FD $MSCALE_SNAPSHOT_MEMFD $SHARED\" > " +
                       dir.path + "/rank-$RANK";
  ASSERT_TRUE(group.start(shell(script), {{"SHARED", "all"}}, diags));
  EXPECT_EQ(group.runningPids().size(), 3u);
  reapAll(group);
  EXPECT_TRUE(group.allCompleted());
  EXPECT_FALSE(group.running());
  std::string port = std::to_string(group.masterPort());
  for (unsigned r = 0; r < 3; ++r) {
    const WorkerGroup::Rank &rank = group.rank(r);
    ASSERT_TRUE(rank.control);
    ASSERT_GE(rank.memoryTierFd, 0);
    for (unsigned other = 0; other < r; ++other) {
      EXPECT_NE(group.rank(other).control->fd(), rank.control->fd());
      EXPECT_NE(group.rank(other).memoryTierFd, rank.memoryTierFd); // never a shared snapshot region
    }
    std::string rs = std::to_string(r);
    EXPECT_EQ(dir.read("rank-" + rs), rs + " " + rs + " 3 3 " + rs + " 3 127.0.0.1 " + port + " " +
                                          std::to_string(rank.control->fd()) + " " +
                                          std::to_string(rank.memoryTierFd) + " all\n");
  }
}

TEST(WorkerGroup, ASingleWorkerWithoutRanksGetsNoRankEnvironment) {
  SingleWorker one;
  TempDir &dir = one.dir;
  WorkerGroup &group = one.group;
  DiagnosticEngine &diags = one.diags;
  ASSERT_TRUE(group.start(shell("echo \"${RANK-none} ${MASTER_PORT-none} ${MSCALE_SNAPSHOT_MEMFD-none}\" > " +
                                dir.path + "/out"),
                          {}, diags));
  reapAll(group);
  EXPECT_EQ(dir.read("out"), "none none none\n");
  EXPECT_EQ(group.masterPort(), 0);
}

TEST(WorkerGroup, StopKillsTheNamedRankTermsTheOthersAndKillsStragglersAfterTheGrace) {
  TempDir dir;
  PlainHost plain;
  WorkerGroup group(plain.host, 3, true);
  std::vector<std::string> warnings;
  group.prepare(false, warnings);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  // Rank 1 ignores SIGTERM (ignored signals stay ignored across exec), as a rank stuck in a
  // collective that masks it would.
  std::string script = "if [ $RANK = 1 ]; then trap '' TERM; fi; touch " + dir.path + "/ready-$RANK; exec sleep 30";
  ASSERT_TRUE(group.start(shell(script), {}, diags));
  for (int r = 0; r < 3; ++r)
    waitFor(dir, "ready-" + std::to_string(r));
  group.stop(/*killNow=*/2u, /*deadlineNs=*/1000);
  EXPECT_EQ(group.stopDeadlineNs(), 1000u);
  for (unsigned r : {0u, 2u}) {
    int status = 0;
    pid_t pid = group.rank(r).pid;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_EQ(group.exited(pid, status), r);
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), r == 2 ? SIGKILL : SIGTERM);
  }
  EXPECT_TRUE(group.running());
  EXPECT_FALSE(group.graceExpired(999));
  EXPECT_TRUE(group.graceExpired(1000));
  EXPECT_FALSE(group.graceExpired(2000)); // once: the caller kills then
  group.signalAll(SIGKILL);
  reapAll(group);
  EXPECT_FALSE(group.allCompleted());
  EXPECT_EQ(group.failingStatus(2u), 128 + SIGKILL); // the rank the fault named
  EXPECT_EQ(group.failingStatus(std::nullopt), 128 + SIGTERM); // else the first that failed
}

TEST(WorkerGroup, ARestartGetsANewMasterPortAndKeepsEachRanksPagesAndMemoryTier) {
  TempDir dir;
  PlainHost plain;
  WorkerGroup group(plain.host, 2, true);
  std::vector<std::string> warnings;
  group.prepare(true, warnings);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::string script = "echo $MASTER_PORT $MSCALE_SNAPSHOT_MEMFD > " + dir.path + "/rank-$RANK.$MSCALE_ATTEMPT";
  ASSERT_TRUE(group.start(shell(script), {{"MSCALE_ATTEMPT", "0"}}, diags));
  uint16_t firstPort = group.masterPort();
  int memfd1 = group.rank(1).memoryTierFd;
  reapAll(group);
  group.prepare(true, warnings); // a second prepare keeps what exists
  EXPECT_EQ(group.rank(1).memoryTierFd, memfd1);
  ASSERT_TRUE(group.start(shell(script), {{"MSCALE_ATTEMPT", "1"}}, diags));
  reapAll(group);
  EXPECT_NE(group.masterPort(), firstPort);
  EXPECT_EQ(dir.read("rank-1.0"), std::to_string(firstPort) + " " + std::to_string(memfd1) + "\n");
  EXPECT_EQ(dir.read("rank-1.1"), std::to_string(group.masterPort()) + " " + std::to_string(memfd1) + "\n");
}

// A crashed worker with a large state beats no more while the kernel tears it down, before its exit
// status arrives: that is a crash on its way to waitpid, not a hang (a zombie stands in for it here).
TEST(WorkerGroup, ARankOnItsWayOutIsNotHungUntilTheExitGrace) {
  PlainHost plain;
  WorkerGroup group(plain.host, 1, false);
  std::vector<std::string> warnings;
  group.prepare(false, warnings);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  ASSERT_TRUE(group.start({"/bin/sleep", "30"}, {}, diags));
  Liveness live; // the group is the beat source of the liveness room (supervise/Liveness.h)
  live.restart(group.size(), 0);
  pid_t pid = group.rank(0).pid;
  void *p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, group.rank(0).control->fd(), 0);
  ASSERT_NE(p, MAP_FAILED);
  auto *page = static_cast<mscale::worker::ControlPage *>(p);
  page->beats = 1;
  EXPECT_TRUE(live.observe(group, 100));
  EXPECT_FALSE(processExiting(pid)); // sleeping
  ::kill(pid, SIGSTOP);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, id_t(pid), &info, WSTOPPED | WNOWAIT), 0);
  EXPECT_FALSE(processExiting(pid)); // stopped: the very picture of a hang
  EXPECT_EQ(rankOf(live.hung(group, 250, 150)), 0u);
  ::kill(pid, SIGKILL);
  ASSERT_EQ(::waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT), 0); // a zombie, not reaped
  EXPECT_TRUE(processExiting(pid));
  EXPECT_FALSE(rankOf(live.hung(group, 250, 150)));
  EXPECT_EQ(rankOf(live.hung(group, 100 + kExitGraceNs, 150)), 0u); // never reaped within the grace: a hang after all
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  group.exited(pid, status);
  EXPECT_FALSE(processExiting(pid)); // gone from /proc
  ::munmap(p, 4096);
}

TEST(WorkerGroup, HeartbeatsAreWatchedPerRank) {
  PlainHost plain;
  WorkerGroup group(plain.host, 2, true);
  std::vector<std::string> warnings;
  group.prepare(false, warnings);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  ASSERT_TRUE(group.start({"/bin/sleep", "30"}, {}, diags));
  Liveness live; // the group is the beat source of the liveness room (supervise/Liveness.h)
  live.restart(group.size(), 0);
  // The ranks' side of their pages, as WorkerApi.h's heartbeat() writes them.
  auto map = [&](unsigned r) {
    void *p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, group.rank(r).control->fd(), 0);
    EXPECT_NE(p, MAP_FAILED);
    return static_cast<mscale::worker::ControlPage *>(p);
  };
  mscale::worker::ControlPage *page0 = map(0), *page1 = map(1);
  EXPECT_FALSE(live.observe(group, 10));
  EXPECT_FALSE(group.commonStep()); // nobody has beaten
  page1->step = 41;
  page1->beats = 1;
  EXPECT_TRUE(live.observe(group, 100));
  EXPECT_FALSE(group.commonStep()); // rank 0 has not beaten yet
  EXPECT_EQ(group.step(1u), 41u);
  // Rank 0 never beat: it is not hung; rank 1 beat once and fell silent.
  EXPECT_FALSE(rankOf(live.hung(group, 249, 150)));
  EXPECT_EQ(rankOf(live.hung(group, 250, 150)), 1u);
  page0->step = 40;
  page0->beats = 1;
  page1->beats = 2;
  EXPECT_TRUE(live.observe(group, 300));
  EXPECT_FALSE(rankOf(live.hung(group, 449, 150)));
  EXPECT_EQ(group.commonStep(), 40u); // the step every rank has done
  // A rank that said it is finishing (its work done, tearing down) may be silent for the exit grace.
  page1->finishing = 1;
  EXPECT_EQ(rankOf(live.hung(group, 450, 150)), 0u); // rank 0, silent since 300, is hung; rank 1 is finishing
  page0->beats = 2;
  EXPECT_TRUE(live.observe(group, 460));
  EXPECT_FALSE(rankOf(live.hung(group, 300 + kExitGraceNs - 1, 150)) == 1u);
  EXPECT_EQ(rankOf(live.hung(group, 300 + kExitGraceNs, 150)).value_or(9), 0u); // rank 0 is silent again by then
  page0->beats = 3;
  EXPECT_TRUE(live.observe(group, 300 + kExitGraceNs));
  EXPECT_EQ(rankOf(live.hung(group, 300 + kExitGraceNs, 150)), 1u); // past the grace, finishing or not
  page1->finishing = 0;
  page1->step = mscale::worker::kStepRestoring;
  EXPECT_EQ(group.step(std::nullopt), mscale::worker::kStepRestoring);
  // Hand-over notices reach every rank; acknowledged once all running ranks took them.
  uint64_t g = group.publishSlices("trainer@0:64:0:0");
  ASSERT_NE(g, 0u);
  page0->ackGeneration = g;
  EXPECT_FALSE(group.acknowledged(g));
  page1->ackGeneration = g;
  EXPECT_TRUE(group.acknowledged(g));
  ::munmap(page0, 4096);
  ::munmap(page1, 4096);
  group.signalAll(SIGKILL);
  reapAll(group);
}

namespace {

// The supervisor over an unapplied session: ranks are plain children, the log goes to a file.
struct SupervisedJob {
  TempDir dir;
  Logger log{"test", /*toStderr=*/false};
  plan::Plan plan;
  std::unique_ptr<Session> session;
  CollectingConsumer sink;
  DiagnosticEngine diags{nullptr, sink};

  explicit SupervisedJob(bool recoverable) {
    std::string error;
    EXPECT_TRUE(log.openFile(dir.path + "/exec.log", error)) << error;
    plan.mutable_provenance()->set_contract("ranks");
    if (recoverable) {
      plan.mutable_fault_tolerance()->set_snapshot_every_steps(10);
      plan.mutable_fault_tolerance()->set_in_memory_tier(true);
    }
    plan.mutable_fault_tolerance()->set_heartbeat_ns(50'000'000);
    session = std::make_unique<Session>(plan, "ranks", "ranks.msp", log, SessionOptions{});
  }
  int run(SupervisorOptions options) {
    sigset_t sigs, old;
    sigemptyset(&sigs);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD})
      sigaddset(&sigs, s);
    ::sigprocmask(SIG_BLOCK, &sigs, &old);
    Supervisor supervisor(*session, log, std::move(options));
    int code = supervisor.run(sigs, diags);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    return code;
  }
  std::string logText() const { return dir.read("exec.log"); }
};

} // namespace

TEST(WorkerGroup, SupervisorRestartsEveryRankWhenOneIsKilledAndCompletesWhenAllExitZero) {
  SupervisedJob job(/*recoverable=*/true);
  SupervisorOptions o;
  o.nprocPerNode = 2;
  o.planPath = "/plans/ranks.msp";
  // Rank 1 kills itself on the first attempt; rank 0 would run for a minute unless stopped.
  o.command = shell("echo \"$MSCALE_ATTEMPT ${MSCALE_RESUME-0} $MSCALE_PLAN\" > " + job.dir.path +
                    "/rank-$RANK.$MSCALE_ATTEMPT; if [ $MSCALE_ATTEMPT = 0 ]; then if [ $RANK = 1 ]; then "
                    "kill -9 $$; fi; exec sleep 60; fi");
  EXPECT_EQ(job.run(std::move(o)), 0);
  std::string log = job.logText();
  EXPECT_NE(log.find("fault worker-crashed at step 0 (rank 1: SIGKILL); stopping the other ranks"), std::string::npos)
      << log;
  EXPECT_NE(log.find("(rank 0) killed by SIGTERM"), std::string::npos) << log;
  EXPECT_NE(log.find("restarting all 2 ranks after worker-crashed at step 0 from the newest snapshot (restart 1 of "
                     "at most 10)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("all 2 ranks completed after 1 restart(s)"), std::string::npos) << log;
  // Rank 0's first attempt may be stopped before it writes anything: only rank 1's is certain.
  EXPECT_EQ(job.dir.read("rank-1.0"), "0 0 /plans/ranks.msp\n");
  for (const char *rank : {"0", "1"})
    EXPECT_EQ(job.dir.read(std::string("rank-") + rank + ".1"), "1 1 /plans/ranks.msp\n");
  EXPECT_TRUE(job.session->workerPids().empty());
}

TEST(WorkerGroup, SupervisorKillsARankThatIgnoresSigtermAfterTheGraceAndReturnsTheFailingRanksStatus) {
  SupervisedJob job(/*recoverable=*/false); // no recovery point: the fault ends the job
  SupervisorOptions o;
  o.nprocPerNode = 3;
  o.rankStopGraceNs = 100'000'000;
  o.command = shell("if [ $RANK = 2 ]; then sleep 0.2; exit 7; fi; trap '' TERM; exec sleep 60");
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(job.run(std::move(o)), 7);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  std::string log = job.logText();
  EXPECT_NE(log.find("fault worker-crashed at step 0 (rank 2: exit 7); stopping the other ranks"), std::string::npos)
      << log;
  EXPECT_NE(log.find("ranks still running 100.0 ms after SIGTERM: SIGKILL"), std::string::npos) << log;
  EXPECT_NE(log.find("the plan has no recovery point"), std::string::npos) << log;
  EXPECT_TRUE(job.session->workerPids().empty());
}

TEST(WorkerGroup, SupervisorGivesUpAfterTheRestartBudgetWithEveryRankStopped) {
  SupervisedJob job(true);
  SupervisorOptions o;
  o.nprocPerNode = 2;
  o.maxRestarts = 1;
  o.command = shell("if [ $RANK = 0 ]; then exit 5; fi; exec sleep 60");
  EXPECT_EQ(job.run(std::move(o)), 1);
  std::string log = job.logText();
  EXPECT_NE(log.find("restarting all 2 ranks after worker-crashed at step 0 from the newest snapshot (restart 1 of "
                     "at most 1)"),
            std::string::npos)
      << log;
  bool gaveUp = false;
  for (const Diagnostic &d : job.sink.diags)
    gaveUp |= d.code == DiagCode::ERR_EXEC_023;
  EXPECT_TRUE(gaveUp);
  EXPECT_TRUE(job.session->workerPids().empty());
}

// ---- the warm standby (plan fault_tolerance.standby_worker) ----------------------------------------

namespace {

SupervisorOptions standbyJob(SupervisedJob &job, unsigned ranks, const char *asStandby) {
  job.session = nullptr;
  job.plan.mutable_fault_tolerance()->set_standby_worker(true);
  job.session = std::make_unique<Session>(job.plan, "ranks", "ranks.msp", job.log, SessionOptions{});
  SupervisorOptions o;
  o.nprocPerNode = ranks;
  o.command = {MSC_EXEC_TEST_WORKER, "standby-job", job.dir.path, asStandby};
  return o;
}

// Processes the supervisor killed on its way out (a discarded standby) are the session's to reap.
void reapLeftovers(Session &session) {
  for (pid_t pid : session.workerPids()) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
}

// Runs the job of standbyJob() to its end (every test's job completes); its log.
std::string runToTheEnd(SupervisedJob &job, unsigned ranks, const char *asStandby) {
  EXPECT_EQ(job.run(standbyJob(job, ranks, asStandby)), 0);
  reapLeftovers(*job.session);
  return job.logText();
}

// The pids of the first "standby worker(s) 12, 13 took over" line of `log`.
std::vector<std::string> tookOver(const std::string &log) {
  std::istringstream lines(log);
  const std::string head = "standby worker(s) ", tail = " took over";
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(head), end = line.find(tail);
    if (at == std::string::npos || end == std::string::npos)
      continue;
    std::vector<std::string> pids;
    std::istringstream list(line.substr(at + head.size(), end - at - head.size()));
    for (std::string pid; std::getline(list, pid, ',');)
      pids.push_back(pid[0] == ' ' ? pid.substr(1) : pid);
    return pids;
  }
  return {};
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

TEST(WarmStandby, TheStandbyOfEveryRankTakesOverAfterACrashWithTheRestartReason) {
  SupervisedJob job(/*recoverable=*/true);
  std::string log = runToTheEnd(job, 2, "wait");
  EXPECT_NE(log.find("fault worker-crashed at step 1 (rank 1: SIGKILL)"), std::string::npos) << log;
  std::vector<std::string> pids = tookOver(log);
  ASSERT_EQ(pids.size(), 2u) << log;
  // The standbys became ranks 0 and 1 of attempt 1, in rank order, and no cold start happened.
  for (unsigned r = 0; r < 2; ++r)
    EXPECT_EQ(job.dir.read("rank-" + std::to_string(r) + ".1"), pids[r] + " worker-crashed at step 1 worker cuda=-\n");
  EXPECT_NE(log.find("all 2 ranks completed after 1 restart(s)"), std::string::npos) << log;
  // Each rank was started cold once: attempt 1 is the standbys.
  EXPECT_EQ(count(log, "(rank 0) started"), 1u) << log;
  EXPECT_EQ(count(log, "(rank 1) started"), 1u) << log;
}

TEST(WarmStandby, AStandbyThatDiesUnaskedIsReplacedWithBackOffAndAfterThreeNoneIsStarted) {
  SupervisedJob job(/*recoverable=*/true);
  std::string log = runToTheEnd(job, 0, "die");
  EXPECT_NE(log.find("exited with status 9 before it was needed; another in 500.0 ms"), std::string::npos) << log;
  EXPECT_NE(log.find("exited with status 9 before it was needed; another in 1000.0 ms"), std::string::npos) << log;
  EXPECT_NE(log.find("exited with status 9 before it was needed; no standby from now on (3 failures)"),
            std::string::npos)
      << log;
  EXPECT_EQ(count(log, "(standby) started"), 3u) << log;
}

TEST(WarmStandby, AStandbyThatBeatsBeforeItHasTheJobIsKilledAndNoneIsStartedAgain) {
  SupervisedJob job(/*recoverable=*/true);
  std::string log = runToTheEnd(job, 0, "beat-early");
  EXPECT_NE(log.find("beat before they had the job: the program does not wait for it"), std::string::npos) << log;
  EXPECT_EQ(count(log, "(standby) started"), 1u) << log;
}

TEST(WarmStandby, APlanWithoutARecoveryPointStartsNoStandby) {
  SupervisedJob job(/*recoverable=*/false);
  std::string log = runToTheEnd(job, 0, "wait"); // it would SIGKILL itself once a standby waits: none does
  EXPECT_EQ(log.find("(standby) started"), std::string::npos) << log;
}

TEST(WarmStandby, OnlyTheDevicePlacementOfARuntimeNotLoadedMayChangeAtTakeOver) {
  using mscale::worker::kRuntimeCuda;
  using mscale::worker::kRuntimeVerbs;
  const std::map<std::string, std::string> started = {{"CUDA_VISIBLE_DEVICES", "0"},
                                                      {"MSCALE_GPU_SLICE_IDS", "1"},
                                                      {"MSCALE_RDMA", "grads@mlx5_0:1:2:0"},
                                                      {"MSCALE_ROLE_TRAINER_CPUS", "0"},
                                                      {kInheritedFdsKey, "5 6 "}};
  worker::ControlPageHost::Environment changes;
  EXPECT_EQ(standbyChanges(started, started, /*waiting=*/false, 0, changes), std::nullopt);
  EXPECT_TRUE(changes.empty());

  // A move off a lost GPU: given to a standby that waits without libcuda, also an unset variable.
  std::map<std::string, std::string> moved = started;
  moved["CUDA_VISIBLE_DEVICES"] = "1";
  moved.erase("MSCALE_GPU_SLICE_IDS");
  EXPECT_EQ(standbyChanges(started, moved, true, kRuntimeVerbs, changes), std::nullopt);
  worker::ControlPageHost::Environment expected = {{"CUDA_VISIBLE_DEVICES", "1"},
                                                   {"MSCALE_GPU_SLICE_IDS", std::nullopt}};
  EXPECT_EQ(changes, expected);
  changes.clear();
  EXPECT_EQ(standbyChanges(started, moved, true, kRuntimeCuda, changes),
            "CUDA_VISIBLE_DEVICES changed and the standby has loaded libcuda");
  EXPECT_EQ(standbyChanges(started, moved, false, 0, changes),
            "CUDA_VISIBLE_DEVICES changed while the standby was still starting");

  // An RDMA failover, against libibverbs.
  std::map<std::string, std::string> failedOver = started;
  failedOver["MSCALE_RDMA"] = "grads@mlx5_1:1:2:0";
  changes.clear();
  EXPECT_EQ(standbyChanges(started, failedOver, true, kRuntimeCuda, changes), std::nullopt);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(standbyChanges(started, failedOver, true, kRuntimeVerbs, changes),
            "MSCALE_RDMA changed and the standby has loaded libibverbs");

  // Anything else makes the standby stale, whatever it loaded: its CPUs, its fds.
  for (const char *key : {"MSCALE_ROLE_TRAINER_CPUS", kInheritedFdsKey}) {
    std::map<std::string, std::string> other = started;
    other[key] = "7";
    EXPECT_EQ(standbyChanges(started, other, true, 0, changes),
              "the worker's environment changed (" + std::string(key) + ")");
  }
}

TEST(WarmStandby, TheTakeOverEnvironmentMustFitThePage) {
  EXPECT_TRUE(worker::ControlPageHost::fits({{"MSCALE_RESTART_REASON", "worker-crashed at step 3"}}));
  EXPECT_TRUE(worker::ControlPageHost::fits({{"GONE", std::nullopt}}));
  EXPECT_FALSE(worker::ControlPageHost::fits({{"A=B", "x"}}));
  EXPECT_FALSE(worker::ControlPageHost::fits({{"", "x"}}));
  EXPECT_FALSE(worker::ControlPageHost::fits({{"BIG", std::string(2000, 'x')}}));
}

TEST(WarmStandby, AStandbyAppliesTheEnvironmentItIsHandedBeforeItRuns) {
  SingleWorker one;
  TempDir &dir = one.dir;
  WorkerGroup &group = one.group;
  DiagnosticEngine &diags = one.diags;
  ASSERT_TRUE(group.startStandby({MSC_EXEC_TEST_WORKER, "standby-job", dir.path, "wait"},
                                 {{"MSCALE_ATTEMPT", "1"}, {"CUDA_VISIBLE_DEVICES", "0"}}, 0, diags));
  ASSERT_EQ(group.liveStandbyPids().size(), 1u);
  pid_t standby = group.liveStandbyPids()[0];
  for (int i = 0; i < 500 && !group.standbyWaiting(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(group.standbyWaiting());
  EXPECT_EQ(group.standbyRuntimes(), 0u); // it loaded neither libcuda nor libibverbs
  EXPECT_EQ(::sched_getscheduler(standby), SCHED_IDLE); // it starts up on idle CPU time only
  EXPECT_FALSE(group.running());
  EXPECT_FALSE(dir.has("rank-0.1")); // it waits for the job
  group.takeOverStandby({{"CUDA_VISIBLE_DEVICES", "3"}, {"MSCALE_RESTART_REASON", "gpu-lost at step 9"}});
  EXPECT_FALSE(group.hasStandby());
  EXPECT_EQ(group.rank(0).pid, standby);
  EXPECT_EQ(::sched_getscheduler(standby), ::sched_getscheduler(0)); // the worker runs as we do
  reapAll(group);
  EXPECT_TRUE(group.allCompleted());
  EXPECT_EQ(dir.read("rank-0.1"), std::to_string(standby) + " gpu-lost at step 9 worker cuda=3\n");
  EXPECT_EQ(group.rank(0).control->step(), 2u); // it beats on its own page, now the rank's
}

TEST(WarmStandby, AStandbyThatEndedIsNotHandedTheJobAndADiscardedOneIsReaped) {
  SingleWorker one;
  TempDir &dir = one.dir;
  WorkerGroup &group = one.group;
  DiagnosticEngine &diags = one.diags;
  const std::vector<std::string> command = {MSC_EXEC_TEST_WORKER, "standby-job", dir.path, "wait"};
  ASSERT_TRUE(group.startStandby(command, {{"MSCALE_ATTEMPT", "1"}}, 0, diags));
  pid_t first = group.liveStandbyPids()[0];
  EXPECT_TRUE(group.standbyAlive());
  // Killed and not reaped yet, as when it dies with the worker before the supervisor looks.
  ::kill(first, SIGKILL);
  siginfo_t info{};
  for (int i = 0; i < 500 && info.si_pid == 0; ++i) {
    ::waitid(P_PID, id_t(first), &info, WEXITED | WNOHANG | WNOWAIT);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(group.standbyAlive());
  int status = 0;
  ASSERT_EQ(::waitpid(first, &status, 0), first);
  EXPECT_EQ(group.standbyExited(first), std::optional<bool>(false)); // it ended unasked
  EXPECT_FALSE(group.hasStandby());
  EXPECT_TRUE(group.standbyPids().empty());

  ASSERT_TRUE(group.startStandby(command, {{"MSCALE_ATTEMPT", "1"}}, 0, diags));
  pid_t second = group.liveStandbyPids()[0];
  group.discardStandby();
  EXPECT_EQ(group.standbyPids(), std::vector<pid_t>{second}); // killed, to be reaped
  group.reapDiscardedStandbys();
  EXPECT_TRUE(group.standbyPids().empty());
  EXPECT_EQ(::waitpid(second, &status, WNOHANG), -1); // already reaped
}
