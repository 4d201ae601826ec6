// The supervisor: how an exit is classified, the control page the executor and its worker share
// (heartbeats, steps, slice hand-over notices), and the whole Supervisor in virtual time over the
// SimWorkerHost (no process: its decisions as a node makes them, a thousand times faster).
#include "executor/core/Logger.h"
#include "executor/Session.h"
#include "executor/Supervisor.h"
#include "executor/supervise/SimWorkerHost.h"
#include "worker/ControlPage.h"
#include "worker/WorkerApi.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace msc;
using namespace msc::exec;
using msc::worker::ControlPageHost;

namespace {
int exited(int code) { return (code & 0xff) << 8; }
int signalled(int sig) { return sig & 0x7f; }
} // namespace

TEST(Supervisor, ClassifiesHowAWorkerEnded) {
  EXPECT_FALSE(classifyWorkerExit(exited(0)));
  auto io = classifyWorkerExit(exited(kWorkerExitIoError));
  ASSERT_TRUE(io);
  EXPECT_EQ(io->kind, FaultClass::NvmeIoError);
  auto full = classifyWorkerExit(exited(kWorkerExitDiskFull));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->kind, FaultClass::DiskFull);
  auto peer = classifyWorkerExit(exited(kWorkerExitPeerLost));
  ASSERT_TRUE(peer);
  EXPECT_EQ(peer->kind, FaultClass::PeerLost);
  EXPECT_EQ(peer->detail, "exit 75: another rank of the job went away");
  EXPECT_STREQ(faultClassName(FaultClass::PeerLost), "peer-lost");
  auto killed = classifyWorkerExit(signalled(9));
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->kind, FaultClass::WorkerCrashed);
  EXPECT_EQ(killed->detail, "SIGKILL");
  auto other = classifyWorkerExit(exited(5));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kind, FaultClass::WorkerCrashed);
  EXPECT_EQ(other->detail, "exit 5");
  EXPECT_STREQ(faultClassName(FaultClass::GpuLost), "gpu-lost");
  EXPECT_STREQ(faultClassName(FaultClass::RdmaPortDown), "rdma-port-down");
}

TEST(Supervisor, ControlPageCarriesHeartbeatsStepsAndHandOvers) {
  std::string error;
  auto host = ControlPageHost::create(error);
  ASSERT_TRUE(host) << error;
  // The worker side finds the page through the variable the executor sets (as a child would).
  ::setenv("MSCALE_CONTROL_FD", std::to_string(host->fd()).c_str(), 1);
  ASSERT_NE(mscale::worker::controlPage(), nullptr);
  EXPECT_EQ(host->beats(), 0u);
  mscale::worker::heartbeat(41);
  mscale::worker::heartbeat(42);
  EXPECT_EQ(host->beats(), 2u);
  EXPECT_EQ(host->step(), 42u);

  uint64_t generation = 0;
  std::string slices;
  EXPECT_FALSE(mscale::worker::pendingSliceUpdate(generation, slices));
  uint64_t g = host->publishSlices("trainer@0:64:0:0");
  EXPECT_FALSE(host->acknowledged(g));
  ASSERT_TRUE(mscale::worker::pendingSliceUpdate(generation, slices));
  EXPECT_EQ(generation, g);
  EXPECT_EQ(slices, "trainer@0:64:0:0");
  mscale::worker::acknowledgeSlices(generation);
  EXPECT_TRUE(host->acknowledged(g));
  EXPECT_FALSE(mscale::worker::pendingSliceUpdate(generation, slices));

  mscale::worker::reportThroughput(123.456);
  EXPECT_DOUBLE_EQ(host->reportedTflops(), 123.456);

  mscale::worker::finishing();
  EXPECT_TRUE(host->finishing());
  using mscale::worker::Failure;
  EXPECT_EQ(host->failure(), Failure::None);
  EXPECT_EQ(host->failureLine(), "");
  // The line is the error's first line, cut to what the page holds; a later word keeps it.
  mscale::worker::failed(Failure::Retryable, ("error[ERR_PY_023]: " + std::string(400, 'x') + "\nnote: more").c_str());
  EXPECT_EQ(host->failure(), Failure::Retryable);
  EXPECT_EQ(host->failureLine(), ("error[ERR_PY_023]: " + std::string(400, 'x')).substr(0, 255));
  mscale::worker::nothingToResume();
  EXPECT_EQ(host->failure(), Failure::NothingToResume);
  EXPECT_EQ(host->failureLine().size(), 255u);

  // A new worker starts from its environment: no stale notice, no stale beats or throughput, and
  // not finishing (the previous worker's word would give it the exit grace against hangs).
  host->publishSlices("trainer@0:32:0:0");
  host->resetForNewWorker();
  EXPECT_EQ(host->beats(), 0u);
  EXPECT_EQ(host->reportedTflops(), 0.0);
  EXPECT_FALSE(host->finishing());
  EXPECT_EQ(host->failure(), Failure::None) << "the previous worker's word is not the new one's";
  EXPECT_EQ(host->failureLine(), "");
  EXPECT_FALSE(mscale::worker::pendingSliceUpdate(generation, slices));
  ::unsetenv("MSCALE_CONTROL_FD");
}

// ---- the supervisor in virtual time ---------------------------------------------------------------
// The whole Supervisor, composed as on a node, over a ManualClock and the SimWorkerHost: no fork, no
// signal, no sleep. The driver below is the node's event loop and the workers' programs at once.

namespace {

constexpr uint64_t kMs = 1'000'000;

struct VirtualJob {
  ManualClock clock{0};
  SimWorkerHost host;
  std::string logPath;
  Logger log{"test", /*toStderr=*/false};
  plan::Plan plan;
  std::unique_ptr<Session> session;
  std::unique_ptr<Supervisor> supervisor;
  CollectingConsumer sink;
  DiagnosticEngine diags{nullptr, sink};
  std::optional<int> status;
  // What each worker does at each millisecond it runs: the program, by the pid's start order.
  std::function<void(pid_t pid, size_t attempt, uint64_t now)> program;

  explicit VirtualJob(bool standby = false) {
    char tmpl[] = "/tmp/msc-virtual-job-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ::close(fd);
    logPath = tmpl;
    std::string error;
    EXPECT_TRUE(log.openFile(logPath, error)) << error;
    plan.mutable_provenance()->set_contract("virtual");
    plan.mutable_fault_tolerance()->set_snapshot_every_steps(10);
    plan.mutable_fault_tolerance()->set_heartbeat_ns(200 * kMs);
    plan.mutable_fault_tolerance()->set_heartbeat_misses(3);
    plan.mutable_fault_tolerance()->set_standby_worker(standby);
    session = std::make_unique<Session>(plan, "virtual", "virtual.msp", log, SessionOptions{});
  }
  ~VirtualJob() { ::unlink(logPath.c_str()); }

  void start(SupervisorOptions o) {
    o.clock = &clock;
    o.host = &host;
    if (o.command.empty())
      o.command = {"train"};
    supervisor = std::make_unique<Supervisor>(*session, log, std::move(o));
    ASSERT_TRUE(supervisor->start(diags));
  }

  // The workers started so far that are not standbys, in start order (attempt numbers).
  size_t attemptOf(pid_t pid) const {
    size_t n = 0;
    for (const SimWorkerHost::Worker &w : host.workers()) {
      if (w.pid == pid)
        return n;
      if (!w.env.count("MSCALE_STANDBY"))
        ++n;
    }
    return n;
  }

  // Runs the node for `forNs` in 1 ms steps: the workers' programs, the ends they had, the
  // supervisor's ticks when it asked for them.
  void runFor(uint64_t forNs) {
    uint64_t until = clock.monotonicNs() + forNs;
    while (!status && clock.monotonicNs() < until) {
      clock.advance(kMs);
      uint64_t now = clock.monotonicNs();
      for (pid_t pid : host.running())
        if (program)
          program(pid, attemptOf(pid), now);
      for (auto [pid, st] : host.takeEnds())
        if (std::optional<int> done = supervisor->onWorkerExit(pid, st, diags)) {
          status = done;
          return;
        }
      if (now >= supervisor->nextWakeNs(now))
        supervisor->tick(now);
      if (std::optional<int> done = supervisor->finished())
        status = done;
    }
  }

  std::string logText() const {
    std::ifstream in(logPath);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool logged(const std::string &text) const { return logText().find(text) != std::string::npos; }
  size_t count(const std::string &kind) const {
    size_t n = 0;
    for (const HistoryEntry &e : supervisor->history())
      n += e.kind == kind;
    return n;
  }
  bool reported(DiagCode code) const {
    for (const Diagnostic &d : sink.diags)
      if (d.code == code)
        return true;
    return false;
  }
};

// A worker that beats every 50 ms, one step each 100 ms, from `step`.
void trainEvery100ms(SimWorkerHost &host, pid_t pid, uint64_t now, uint64_t firstStep = 0) {
  if (now % (50 * kMs) == 0)
    host.beat(pid, firstStep + now / (100 * kMs));
}

} // namespace

TEST(VirtualSupervisor, AWorkerIsHungAtExactlyHeartbeatTimesMissesAfterItsLastBeat) {
  VirtualJob job;
  uint64_t lastBeat = 950 * kMs; // its last beat, at step 9; silent from then on
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (attempt > 0 || now <= lastBeat)
      trainEvery100ms(job.host, pid, now);
  };
  job.start({});
  job.runFor(lastBeat + 599 * kMs);
  const SimWorkerHost::Worker &first = job.host.workers()[0];
  EXPECT_TRUE(first.signals.empty()) << "599 ms of silence is within the budget of 3 x 200 ms";
  job.runFor(21 * kMs); // the beats are sampled every 20 ms
  ASSERT_EQ(first.signals, std::vector<int>{SIGKILL});
  EXPECT_TRUE(job.logged("fault worker-hung at step 9 (no worker heartbeat for 600.0 ms, 3 heartbeats 200.0 ms apart)"))
      << job.logText();
  job.runFor(10 * kMs);
  EXPECT_EQ(job.host.workers().size(), 2u) << "restarted at once: the attempt had made progress";
  EXPECT_TRUE(job.logged("(restart 1 of at most 10)"));
}

// start_within bounds the silence before a worker's first beat: one stuck at its rendezvous (or in
// start-up) is hung then, and restarted with the back-off of attempts that made no progress.
TEST(VirtualSupervisor, AWorkerThatNeverBeatsIsHungAfterStartWithin) {
  VirtualJob job;
  job.plan.mutable_fault_tolerance()->set_start_within_ns(2'000 * kMs);
  job.session = std::make_unique<Session>(job.plan, "virtual", "virtual.msp", job.log, SessionOptions{});
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (attempt > 0)
      trainEvery100ms(job.host, pid, now);
  };
  job.start({});
  job.runFor(1'990 * kMs);
  const SimWorkerHost::Worker &first = job.host.workers()[0];
  EXPECT_TRUE(first.signals.empty()) << "within start_within: starting up";
  job.runFor(40 * kMs);
  ASSERT_EQ(first.signals, std::vector<int>{SIGKILL});
  EXPECT_TRUE(job.logged("(no first worker heartbeat within 2000.0 ms of its start (start_within 2000.0 ms): stuck "
                         "starting up or at its rendezvous)"))
      << job.logText();
  job.runFor(100 * kMs);
  EXPECT_EQ(job.host.workers().size(), 2u) << "restarted";
  job.runFor(10'000 * kMs);
  EXPECT_EQ(job.host.workers().size(), 2u) << "the restart beats: no hang, however long it runs";
}

// The agent's lending takes back what an owner lent through this hook: it must run once a fault is
// known, before the faulted worker is stopped or any new one started.
TEST(VirtualSupervisor, AFaultIsToldBeforeTheWorkerIsStoppedOrRestarted) {
  VirtualJob job;
  uint64_t lastBeat = 950 * kMs;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (attempt > 0 || now <= lastBeat)
      trainEvery100ms(job.host, pid, now);
  };
  std::vector<std::pair<size_t, size_t>> told; // workers started, and signals sent, when told
  SupervisorOptions o;
  o.faulted = [&] {
    size_t signals = 0;
    for (const SimWorkerHost::Worker &w : job.host.workers())
      signals += w.signals.size();
    told.emplace_back(job.host.workers().size(), signals);
  };
  job.start(std::move(o));
  job.runFor(lastBeat + 700 * kMs);
  ASSERT_EQ(job.host.workers().size(), 2u) << "hung, then restarted";
  ASSERT_EQ(told.size(), 1u) << "told once, for the one fault";
  EXPECT_EQ(told[0], (std::pair<size_t, size_t>{1, 0})) << "before the kill and the restart";
}

TEST(VirtualSupervisor, RestartsThatMakeNoProgressBackOffAndTheBudgetEndsThem) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t, uint64_t) { job.host.exit(pid, 1); }; // dies at start-up, every time
  SupervisorOptions o;
  o.maxRestarts = 4;
  job.start(std::move(o));
  std::vector<uint64_t> startedAt = {0}; // the first attempt starts with supervision
  size_t seen = 1;
  while (!job.status && job.clock.monotonicNs() < 60'000 * kMs) {
    job.runFor(kMs);
    for (; seen < job.host.workers().size(); ++seen)
      startedAt.push_back(job.clock.monotonicNs());
  }
  ASSERT_EQ(job.status, std::optional<int>(1));
  EXPECT_TRUE(job.reported(DiagCode::ERR_EXEC_023));
  ASSERT_EQ(startedAt.size(), 5u); // the first attempt and four restarts
  std::vector<uint64_t> gaps;
  for (size_t i = 1; i < startedAt.size(); ++i)
    gaps.push_back((startedAt[i] - startedAt[i - 1]) / kMs);
  // Each attempt runs 1 ms; the second restart in a row without progress waits a heartbeat, then twice that.
  EXPECT_EQ(gaps, (std::vector<uint64_t>{1, 201, 401, 801}));
  EXPECT_TRUE(job.logged("back-off: 2 attempts in a row failed without progress; restart 2 in 200.0 ms"))
      << job.logText();
}

// A worker that resumes from step 20 and dies on reaching step 25, every time: progress each time,
// so no back-off, yet the same step fails again; the third time is a crash loop, not restart 3.
TEST(VirtualSupervisor, AWorkerFailingAtTheSameStepEveryTimeIsStoppedAsACrashLoop) {
  VirtualJob job;
  std::map<pid_t, uint64_t> startedAt;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    uint64_t t0 = startedAt.try_emplace(pid, now).first->second;
    uint64_t step = (attempt == 0 ? 0 : 20) + (now - t0) / (100 * kMs);
    if (step >= 25)
      job.host.exit(pid, 1);
    else if ((now - t0) % (50 * kMs) == 0)
      job.host.beat(pid, step);
  };
  job.start({});
  job.runFor(60'000 * kMs);
  ASSERT_EQ(job.status, std::optional<int>(1));
  EXPECT_EQ(job.host.workers().size(), 3u) << "the first attempt and two restarts";
  bool said = false;
  for (const Diagnostic &d : job.sink.diags)
    said |= d.code == DiagCode::ERR_EXEC_029 &&
            d.message.find("3 attempts in a row failed at step 24") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_FALSE(job.reported(DiagCode::ERR_EXEC_023)) << "the budget of 10 was not what ended it";
  EXPECT_EQ(job.count("gave-up"), 1u);
}

// The same loop when each attempt resumes and fails within a millisecond, before any tick samples
// its beats: the step it reached is read from its page.
TEST(VirtualSupervisor, ACrashLoopFasterThanTheTicksIsStillOne) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t) {
    for (uint64_t step = attempt == 0 ? 0 : 20; step < 25; ++step)
      job.host.beat(pid, step);
    job.host.exit(pid, 1);
  };
  job.start({});
  job.runFor(60'000 * kMs);
  ASSERT_EQ(job.status, std::optional<int>(1));
  EXPECT_EQ(job.host.workers().size(), 3u);
  EXPECT_TRUE(job.reported(DiagCode::ERR_EXEC_029));
}

// "Nothing to resume" is said on the control page: a restarted worker that says it ends supervision
// with ERR_EXEC_022; one that merely exits 3 (its program's own status) is an ordinary crash.
TEST(VirtualSupervisor, NothingToResumeIsWhatThePageSaysNotExitStatusThree) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (attempt == 0 && now == 100 * kMs) {
      job.host.beat(pid, 12);
      job.host.exit(pid, 3); // the program's own status 3: a crash like any other
    } else if (attempt == 1 && now == 200 * kMs) {
      job.host.sayFailed(pid, mscale::worker::Failure::NothingToResume);
      job.host.exit(pid, 1);
    }
  };
  job.start({});
  job.runFor(10'000 * kMs);
  ASSERT_EQ(job.status, std::optional<int>(1));
  EXPECT_EQ(job.host.workers().size(), 2u) << "exit 3 was restarted; nothing to resume was not";
  EXPECT_TRUE(job.logged("fault worker-crashed at step 12 (exit 3)")) << job.logText();
  EXPECT_TRUE(job.reported(DiagCode::ERR_EXEC_022));
}

// A worker's error line is in its exit's log line and the fault; one that says a restart cannot fix
// it ends supervision at once (ERR_EXEC_030) with its line, the restart budget unspent.
TEST(VirtualSupervisor, AnErrorNoRestartCanFixEndsSupervisionAtOnce) {
  VirtualJob job;
  using mscale::worker::Failure;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (attempt == 0 && now == 100 * kMs) {
      job.host.beat(pid, 12);
      job.host.sayFailed(pid, Failure::Retryable, "RuntimeError: loss is nan");
      job.host.exit(pid, 1);
    } else if (attempt == 1 && now == 200 * kMs) {
      job.host.sayFailed(pid, Failure::RetryCannotFix, "error[ERR_PY_023]: snapshot of step 10 does not fit this job");
      job.host.exit(pid, 1);
    }
  };
  job.start({});
  job.runFor(10'000 * kMs);
  ASSERT_EQ(job.status, std::optional<int>(1));
  EXPECT_EQ(job.host.workers().size(), 2u) << "a plain error was restarted; one no restart can fix was not";
  EXPECT_TRUE(job.logged("exited with status 1: RuntimeError: loss is nan")) << job.logText();
  EXPECT_TRUE(job.logged("fault worker-crashed at step 12 (exit 1: RuntimeError: loss is nan)")) << job.logText();
  ASSERT_TRUE(job.reported(DiagCode::ERR_EXEC_030));
  bool named = false;
  for (const Diagnostic &d : job.sink.diags)
    named |= d.code == DiagCode::ERR_EXEC_030 && d.message.find("snapshot of step 10 does not fit") != std::string::npos;
  EXPECT_TRUE(named) << "the give-up carries the worker's line";
}

// `run --resume` after the executor was lost is a recovery like any other: timed from this
// executor's start and logged with its timeline, once the worker got past its restored step.
TEST(VirtualSupervisor, AResumeAfterALostNodeIsLoggedAsItsRecovery) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t, uint64_t now) {
    if (now == 100 * kMs)
      job.host.beat(pid, mscale::worker::kStepRestoring);
    else if (now == 200 * kMs)
      job.host.beat(pid, 20); // restored: the snapshot of step 20
    else if (now == 300 * kMs)
      job.host.beat(pid, 21);
    else if (now == 400 * kMs)
      job.host.exit(pid, 0);
  };
  SupervisorOptions o;
  o.resumeAfterNodeLoss = true;
  job.start(o);
  job.runFor(1'000 * kMs);
  ASSERT_EQ(job.status, std::optional<int>(0));
  EXPECT_TRUE(job.logged("resuming after a lost node")) << job.logText();
  EXPECT_TRUE(job.logged("recovered from node-lost: step 21 done")) << job.logText();
  EXPECT_TRUE(job.logged("timeline: fault=node-lost step=21")) << job.logText();
}

TEST(VirtualSupervisor, ASignalDuringTheBackOffEndsSupervisionWithoutARestart) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t, uint64_t) { job.host.exit(pid, 1); };
  job.start({});
  job.runFor(50 * kMs); // two attempts ended: the next restart waits 200 ms
  ASSERT_EQ(job.host.workers().size(), 2u);
  job.supervisor->forwardSignal(SIGTERM);
  EXPECT_EQ(job.supervisor->finished(), std::optional<int>(128 + SIGTERM));
  job.runFor(1'000 * kMs);
  EXPECT_EQ(job.host.workers().size(), 2u);
}

// A restart that waited out its back-off and then cannot start ends supervision with status 1 and
// the launch's ERR_EXEC_009, though no worker is left to report an end.
TEST(VirtualSupervisor, ARestartThatCannotStartAfterTheBackOffEndsSupervision) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t, uint64_t) { job.host.exit(pid, 1); };
  job.start({});
  job.runFor(50 * kMs); // two attempts ended: the next restart waits 200 ms
  ASSERT_EQ(job.host.workers().size(), 2u);
  job.host.failNextStart();
  job.runFor(1'000 * kMs);
  EXPECT_EQ(job.status, std::optional<int>(1));
  EXPECT_EQ(job.supervisor->finished(), std::optional<int>(1));
  EXPECT_EQ(job.host.workers().size(), 2u);
  EXPECT_TRUE(job.logged("error[ERR_EXEC_009]")) << job.logText();
}

TEST(VirtualSupervisor, AWarmStandbyIsStartedOnceTheJobRunsSteadyAndTakesOverAfterACrash) {
  VirtualJob job(/*standby=*/true);
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    SimWorkerHost::Worker *w = job.host.find(pid);
    if (w->env.count("MSCALE_STANDBY") && w->page && !w->page->takeOver.load()) {
      w->page->standbyWaiting.store(1); // started up, state allocated, waiting in takeOver()
      return;
    }
    if (attempt == 0 && now == 2'000 * kMs)
      job.host.exit(pid, 1);
    else
      trainEvery100ms(job.host, pid, now, attempt * 100);
  };
  job.start({});
  job.runFor(1'000 * kMs);
  ASSERT_EQ(job.host.workers().size(), 2u);
  const SimWorkerHost::Worker &standby = job.host.workers()[1];
  EXPECT_EQ(standby.env.at("MSCALE_STANDBY"), "1");
  EXPECT_EQ(standby.env.at("MSCALE_ATTEMPT"), "1");
  EXPECT_EQ(standby.policy, SCHED_IDLE);
  EXPECT_TRUE(job.logged("ready: waiting with their state allocated")) << job.logText();
  job.runFor(1'500 * kMs);
  EXPECT_EQ(job.host.workers().size(), 3u) << "the standby took over; a new standby stands by for attempt 2";
  EXPECT_TRUE(job.logged("took over")) << job.logText();
  EXPECT_EQ(job.count("recovered"), 1u);
  EXPECT_EQ(job.host.workers()[2].env.at("MSCALE_ATTEMPT"), "2");
}

TEST(VirtualSupervisor, AThousandSimulatedSecondsWithAFaultEveryHundred) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (now % (100'000 * kMs) == 0 && attempt == now / (100'000 * kMs) - 1)
      job.host.exit(pid, 1); // crashes once per 100 s
    else
      trainEvery100ms(job.host, pid, now);
  };
  job.start({});
  auto wall = std::chrono::steady_clock::now();
  job.runFor(1'000'000 * kMs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  EXPECT_FALSE(job.status) << job.logText();
  EXPECT_EQ(job.count("fault"), 10u); // at 100 s, 200 s, ... 1000 s
  EXPECT_EQ(job.count("recovered"), 9u); // the last restart's first step is after the end
  EXPECT_EQ(job.host.workers().size(), 11u);
  RecordProperty("wall_seconds_for_1000_simulated", std::to_string(seconds));
}

// ---- a new placement that keeps the node (issue 29: the job's world size changed) ----------------

namespace {
// A job whose plan keeps snapshots in an in-memory tier, placed as `rank` of `world`.
void startPlaced(VirtualJob &job, const std::string &rank, const std::string &world) {
  job.plan.mutable_fault_tolerance()->set_in_memory_tier(true);
  job.session = std::make_unique<Session>(job.plan, "virtual", "virtual.msp", job.log, SessionOptions{});
  SupervisorOptions o;
  o.environment = {{"RANK", rank}, {"WORLD_SIZE", world}, {"DATASET", "laion"}};
  job.start(std::move(o));
}
} // namespace

TEST(VirtualSupervisor, ANewPlacementRestartsTheWorkerAtItsNewPlaceWithTheSameMemoryTier) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) { trainEvery100ms(job.host, pid, now, attempt * 100); };
  startPlaced(job, "2", "4");
  job.runFor(1'000 * kMs);
  std::string error;
  ASSERT_TRUE(job.supervisor->reassign({{"RANK", "1"}, {"WORLD_SIZE", "3"}, {"DATASET", "laion"}},
                                       "rank 2 of 4 -> rank 1 of 3", error))
      << error;
  job.runFor(500 * kMs);
  ASSERT_EQ(job.host.workers().size(), 2u) << job.logText();
  const SimWorkerHost::Worker &old = job.host.workers()[0], &placed = job.host.workers()[1];
  EXPECT_EQ(old.signals, std::vector<int>{SIGTERM}) << "asked to leave, not killed";
  EXPECT_EQ(placed.env.at("RANK"), "1");
  EXPECT_EQ(placed.env.at("WORLD_SIZE"), "3");
  EXPECT_EQ(placed.env.at("DATASET"), "laion");
  EXPECT_EQ(placed.env.at("MSCALE_ATTEMPT"), "1");
  EXPECT_EQ(placed.env.at("MSCALE_RESTART_REASON"), "reassigned");
  EXPECT_EQ(placed.env.count("MSCALE_RESUME"), 0u) << "it restores what it finds, as a placement's first worker";
  ASSERT_TRUE(old.env.count("MSCALE_SNAPSHOT_MEMFD"));
  EXPECT_EQ(placed.env.at("MSCALE_SNAPSHOT_MEMFD"), old.env.at("MSCALE_SNAPSHOT_MEMFD"))
      << "the memory tier the old place wrote is the new place's";
  EXPECT_EQ(job.count("fault"), 0u) << job.logText();
  EXPECT_EQ(job.count("reassigned"), 1u);
  EXPECT_EQ(job.supervisor->reassignments(), 1u);
  EXPECT_FALSE(job.status);
  EXPECT_TRUE(job.logged("keeping the applied resources and the memory tier")) << job.logText();
}

TEST(VirtualSupervisor, ARankThatIgnoresTheStopIsKilledAfterTheGraceAndNoFaultIsRaised) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) { trainEvery100ms(job.host, pid, now, attempt * 100); };
  startPlaced(job, "0", "2");
  job.runFor(500 * kMs);
  job.host.find(job.host.workers()[0].pid)->ignoresSigterm = true;
  std::string error;
  ASSERT_TRUE(job.supervisor->reassign({{"RANK", "0"}, {"WORLD_SIZE", "3"}, {"DATASET", "laion"}}, "grow", error));
  job.runFor(1'000 * kMs); // the grace: 2 s by default
  EXPECT_EQ(job.host.workers().size(), 1u) << "still in its grace";
  job.runFor(1'500 * kMs);
  ASSERT_EQ(job.host.workers().size(), 2u) << job.logText();
  EXPECT_EQ(job.host.workers()[0].signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_EQ(job.host.workers()[1].env.at("WORLD_SIZE"), "3");
  EXPECT_EQ(job.count("fault"), 0u) << job.logText();
}

// A grow: the job stopped after a step at its old size (a planned stop: every rank exited 0) and
// supervision ended; the new placement starts it again at the larger size.
TEST(VirtualSupervisor, ANewPlacementAfterAPlannedStopStartsSupervisionAgain) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (attempt == 0 && now == 600 * kMs)
      job.host.exit(pid, 0);
    else
      trainEvery100ms(job.host, pid, now, attempt * 100);
  };
  startPlaced(job, "0", "2");
  job.supervisor->requestStopAfter(5);
  job.runFor(1'000 * kMs);
  ASSERT_EQ(job.status, std::optional<int>(0)) << job.logText();
  job.status.reset();
  std::string error;
  ASSERT_TRUE(job.supervisor->reassign({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"DATASET", "laion"}},
                                       "rank 0 of 2 -> rank 0 of 4", error))
      << error;
  EXPECT_FALSE(job.supervisor->finished());
  job.runFor(1'000 * kMs);
  ASSERT_EQ(job.host.workers().size(), 2u);
  EXPECT_EQ(job.host.workers()[1].env.at("WORLD_SIZE"), "4");
  EXPECT_FALSE(job.status) << "the new attempt runs on";
  ASSERT_NE(job.host.workers()[1].page, nullptr);
  EXPECT_EQ(job.host.workers()[1].page->stopAfterStep.load(), 0u) << "the old placement's planned stop is withdrawn";
}

TEST(VirtualSupervisor, AJobWithoutARecoveryPointIsNotKeptAcrossANewPlacement) {
  VirtualJob job;
  job.plan.mutable_fault_tolerance()->set_snapshot_every_steps(0);
  job.program = [&](pid_t pid, size_t, uint64_t now) { trainEvery100ms(job.host, pid, now); };
  job.session = std::make_unique<Session>(job.plan, "virtual", "virtual.msp", job.log, SessionOptions{});
  job.start({});
  job.runFor(300 * kMs);
  std::string error;
  EXPECT_FALSE(job.supervisor->reassign({{"RANK", "1"}}, "shrink", error));
  EXPECT_NE(error.find("no recovery point"), std::string::npos) << error;
  job.runFor(300 * kMs);
  EXPECT_EQ(job.host.workers().size(), 1u);
  EXPECT_TRUE(job.host.workers()[0].signals.empty()) << "nothing changed";
  EXPECT_EQ(job.count("reassigned"), 0u);
}

// A second node lost while the first new placement is still stopping the old attempt: the newer
// placement wins and one worker starts, never one per placement.
TEST(VirtualSupervisor, TwoPlacementsInARowStartOneWorkerAtTheNewerPlace) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) { trainEvery100ms(job.host, pid, now, attempt * 100); };
  startPlaced(job, "3", "4");
  job.runFor(500 * kMs);
  job.host.find(job.host.workers()[0].pid)->ignoresSigterm = true; // still leaving its collective
  std::string error;
  ASSERT_TRUE(job.supervisor->reassign({{"RANK", "2"}, {"WORLD_SIZE", "3"}, {"DATASET", "laion"}}, "4 -> 3", error));
  job.runFor(100 * kMs);
  ASSERT_TRUE(job.supervisor->reassign({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"DATASET", "laion"}}, "3 -> 2", error));
  job.runFor(3'000 * kMs);
  ASSERT_EQ(job.host.workers().size(), 2u) << job.logText();
  EXPECT_EQ(job.host.workers()[1].env.at("RANK"), "1");
  EXPECT_EQ(job.host.workers()[1].env.at("WORLD_SIZE"), "2");
  EXPECT_EQ(job.host.running().size(), 1u);
  EXPECT_EQ(job.supervisor->reassignments(), 1u);
  EXPECT_EQ(job.count("reassigned"), 2u);
  EXPECT_EQ(job.count("fault"), 0u);
}

// A new placement is an attempt, not a restart: a crash after it is the budget's first restart and
// the job's third attempt.
TEST(VirtualSupervisor, ANewPlacementSpendsNoRestartButCountsAsAnAttempt) {
  VirtualJob job;
  job.program = [&](pid_t pid, size_t attempt, uint64_t now) {
    if (attempt == 1 && now == 1'500 * kMs)
      job.host.exit(pid, 1);
    else
      trainEvery100ms(job.host, pid, now, attempt * 100);
  };
  startPlaced(job, "1", "2");
  job.runFor(500 * kMs);
  std::string error;
  ASSERT_TRUE(job.supervisor->reassign({{"RANK", "0"}, {"WORLD_SIZE", "3"}, {"DATASET", "laion"}}, "grow", error));
  job.runFor(2'000 * kMs);
  ASSERT_EQ(job.host.workers().size(), 3u) << job.logText();
  EXPECT_TRUE(job.logged("(restart 1 of at most 10)")) << job.logText();
  EXPECT_EQ(job.host.workers()[2].env.at("MSCALE_ATTEMPT"), "2");
  EXPECT_EQ(job.host.workers()[2].env.at("MSCALE_RESUME"), "1");
  EXPECT_EQ(job.host.workers()[2].env.at("WORLD_SIZE"), "3") << "a restart keeps the new place";
  EXPECT_EQ(job.count("fault"), 1u);
}
