// The supervisor of one contract's worker, or of the ranks of one job (mscale-exec run
// --nproc-per-node N: executor/WorkerGroup): heartbeats on every GPU slice, RDMA port and each rank; fault classification; recovery (a healthy GPU, the failover port,
// a restart from the newest snapshot); the density/temperature monitor that resizes GPU slices
// while the worker runs (hand-over: the new slice exists before the old one is released).
//
// The worker talks to it through the control page (WorkerApi.h) and its exit status:
//   0 completed; 74 data read failed (nvme-io-error); 73 snapshot write found the disk full;
//   3 nothing valid to resume from (the supervisor stops: never a silent fresh start).
// Everything it decides goes to the log with its reason and numbers, and to history().
//
// Ranks: the group is the job. A rank that crashes, hangs (no beats on *its* page) or exits non-zero
// is a fault of the job: the other ranks are stopped (SIGTERM, SIGKILL after a short grace) and,
// when the plan has a recovery point, every rank is restarted (they agree among themselves on the
// snapshot step to resume). The job completes when every rank has exited 0. With one worker (no
// --nproc-per-node) everything, log lines included, is as it was before ranks existed.
#pragma once

#include "admission/PlanRecheck.h"
#include "executor/Logger.h"
#include "executor/RecoveryTimeline.h"
#include "executor/ResizePolicy.h"
#include "executor/Session.h"
#include "executor/WarmStandby.h"
#include "executor/WorkerGroup.h"
#include "hal/Topology.h"

#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

enum class FaultClass { GpuLost, NvmeIoError, RdmaPortDown, WorkerCrashed, WorkerHung, DiskFull, NodeLost };
const char *faultClassName(FaultClass c);

struct Fault {
  FaultClass kind = FaultClass::WorkerCrashed;
  std::string detail;  // "SIGKILL", "exit 74", "sim slice 3 on gpu 0 missed 3 heartbeats"
  unsigned gpu = 0;    // GpuLost: the GPU
  std::optional<unsigned> rank = std::nullopt; // the rank it is of (its exit, its silence); none: the job's resources
};

// Worker exit statuses with a meaning to the supervisor (the worker side: WorkerApi.h users).
constexpr int kWorkerExitNoSnapshot = 3;
constexpr int kWorkerExitDiskFull = 73;
constexpr int kWorkerExitIoError = 74;

// How a worker ended (a waitpid status): nullopt when it completed (exit 0).
std::optional<Fault> classifyWorkerExit(int waitStatus);

// The plan's worker heartbeat (200 ms where it sets none) and the beats that may be missed before a
// worker counts as hung (3): for the supervisor's workers and for attached processes alike.
uint64_t heartbeatIntervalNs(const plan::FaultTolerance &ft);
uint32_t heartbeatMisses(const plan::FaultTolerance &ft);
// heartbeat x misses: the silence after which a worker that has beaten is hung.
uint64_t hangBudgetNs(const plan::FaultTolerance &ft);
// How often workers' beats are sampled: several times per heartbeat, so that a hang is declared
// within a small part of a heartbeat after the budget.
uint64_t beatSampleIntervalNs(const plan::FaultTolerance &ft);

struct SupervisorOptions {
  std::vector<std::string> command;  // empty: the contract holds resources only (no worker to supervise)
  std::map<std::string, std::string> environment; // extra worker environment (the submitter's)
  uint32_t maxRestarts = 10;
  bool resumeAfterNodeLoss = false; // the first worker resumes: an executor before this one was lost
  // Ranks of one job (--nproc-per-node N, like torchrun): 0 is a single worker without the rank
  // environment, as before; N >= 1 starts N ranks with RANK, WORLD_SIZE, MASTER_ADDR/PORT, ...
  unsigned nprocPerNode = 0;
  // How long the other ranks get to end after SIGTERM when one rank failed, before SIGKILL.
  uint64_t rankStopGraceNs = 2'000'000'000;
  // The plan file being run (absolute), exported as MSCALE_PLAN: the one `run` was given, or the
  // agent's state file of the contract; empty: none to name (an agent without a state directory).
  std::string planPath;
  // The node the re-checks of resized or moved plans run against (the live node, reloaded).
  std::function<std::optional<hal::Topology>(DiagnosticEngine &)> loadTopology;
  // Called when a device of the node failed (a GPU lost, an RDMA port down, an NVMe I/O error),
  // before recovery loads the topology: a loader that keeps the node's topology between calls must
  // discover it anew then (the agent's, hal/LiveRefresh.h, re-reads only what changes in health).
  std::function<void()> deviceFailed;
  admission::RecheckOptions recheck;
  // The other contracts admitted on the node (the agent's); re-checks admit against them.
  std::function<admission::Held()> admitted;
  // Called after a resize or a move changed the contract's plan (the agent persists it).
  std::function<void(const plan::Plan &)> planChanged;
};

struct HistoryEntry {
  int64_t unixMs = 0;
  std::string kind;    // "fault", "recovered", "resize", "held", "refused", "gave-up"
  std::string text;
};

class Supervisor {
public:
  Supervisor(Session &session, Logger &log, SupervisorOptions options);
  ~Supervisor();

  // Starts the worker and supervises it until it completes, recovery is impossible, or a
  // forwarded signal ends it. `signals` (SIGCHLD and the ones forwarded) are blocked by the caller.
  // Returns the status for mscale-exec: the worker's, 128+signal, or 1 with an ERR_EXEC diagnostic.
  int run(const sigset_t &signals, DiagnosticEngine &diags);

  // The same, driven by an event loop that supervises many (the agent): start(), then
  // onWorkerExit() when waitpid reports the worker, and tick() whenever nextWakeNs() has come.
  bool start(DiagnosticEngine &diags);
  // Recovers when it should. The final status when supervision is over; nullopt while a worker
  // (a rank, a restarted group) still runs. `pid` is the worker waitpid reported; the form without
  // it is for a single worker (session.workerPid()).
  std::optional<int> onWorkerExit(pid_t pid, int waitStatus, DiagnosticEngine &diags);
  std::optional<int> onWorkerExit(int waitStatus, DiagnosticEngine &diags);
  void tick(uint64_t nowNs);
  uint64_t nextWakeNs(uint64_t nowNs) const;
  void forwardSignal(int sig);
  // A resize asked for by hand: `next` is this contract's plan compiled anew (another profile).
  // Only GPU slices and the scaling policy may differ. False with `error` (nothing changed).
  bool resizeTo(const plan::Plan &next, const std::string &why, std::string &error);

  // Releases what a hand-over in progress still holds (before the session is released).
  void shutdown();

  const std::vector<HistoryEntry> &history() const { return history_; }
  const WorkerGroup &workers() const { return group_; }
  // The warm standby's processes (plan fault_tolerance.standby_worker), not yet reaped: whoever
  // reaps the workers reaps these too and reports them through onWorkerExit(pid, ...).
  std::vector<pid_t> standbyPids() const { return standby_.pids(); }
  // The monitor's latest sample of each GPU slice (status reads these: sampling advances a window).
  std::vector<Session::GpuSample> lastSamples() const;
  static uint64_t monotonicNs();

private:
  struct SliceWatch;
  // Starts every rank (one worker when there are no ranks) of a new attempt.
  bool startWorker(DiagnosticEngine &diags, const std::string &restartReason);
  // The variables of attempt `attempt` (a restart when `restart`), without the restart reason.
  std::map<std::string, std::string> attemptEnvironment(uint32_t attempt, bool restart) const;
  RankLauncher launcher();
  // Whether the running attempt may be stood by for now (WarmStandby::tick).
  bool steadyForStandby() const;
  // Every rank of an attempt has ended: completion, a recovery, or the end of supervision (and of
  // the standby with it).
  std::optional<int> finishAttempt(uint64_t now, DiagnosticEngine &diags);
  std::optional<int> endAttempt(uint64_t now, DiagnosticEngine &diags);
  void heartbeatTick(uint64_t now);  // the devices' heartbeats (GPU slices, RDMA ports): once per heartbeat
  void hangTick(uint64_t now);       // the workers' beats: several samples per heartbeat (kBeatSamplesPerHeartbeat)
  void monitorTick(uint64_t now);
  void handOverTick(uint64_t now);
  // A fault found while the worker runs; `lastGoodNs`: when what failed last answered (0 unknown).
  void raise(Fault fault, uint64_t now, uint64_t lastGoodNs);
  // After the worker of a fault has ended: move what must move, restart. False: stop with `status`.
  bool recover(const Fault &fault, DiagnosticEngine &diags, int &status);
  bool moveOffLostGpu(unsigned gpu, DiagnosticEngine &diags);
  bool resize(size_t entry, unsigned toSlices, const std::string &why, uint64_t now);
  // Re-check, diff, hand over: the common path of policy and manual resizes.
  bool handOverTo(const plan::Plan &next, const std::string &head, const std::string &why, uint64_t now,
                  std::string &error);
  void resetControllers();
  void record(const std::string &kind, const std::string &text);
  // "step 64", or "restore" while the worker restores: of `rank`, else of the job (the step every rank has done).
  std::string stepText(std::optional<unsigned> rank = std::nullopt) const;
  std::string rankText(std::optional<unsigned> rank) const; // " (rank 1)" where there are several, else ""
  uint64_t hangAfterNs() const { return hangAfterNs_; }
  void noteProgress(uint64_t now);

  Session &session_;
  Logger &log_;
  SupervisorOptions options_;
  WorkerGroup group_; // the ranks (one for a single worker): pids, control pages, memory tiers
  WarmStandby standby_;
  bool recoverable_ = false;
  uint32_t restarts_ = 0;
  std::optional<Fault> pendingFault_;   // this attempt failed: the ranks still running are being stopped
  std::optional<unsigned> cannotResume_; // a restarted rank found no snapshot (exit 3): stop, ERR_EXEC_022
  bool stopping_ = false;               // a forwarded signal: the worker's end is not a fault
  uint64_t heartbeatNs_, windowNs_, hangAfterNs_;
  uint32_t misses_;
  uint64_t beatSampleNs_;
  uint64_t nextHeartbeat_ = UINT64_MAX, nextBeatSample_ = UINT64_MAX, nextWindow_ = UINT64_MAX; // set by start()
  std::vector<SliceWatch> slices_;
  std::map<uint64_t, uint32_t> qpMisses_;      // missed heartbeats by QP group id (GPU slices: id | 1<<63)
  std::map<uint64_t, uint64_t> lastGood_;      // the same keys: when they last answered
  bool everBeat_ = false; // some worker of this contract used the control page
  std::map<size_t, Session::GpuSample> lastSamples_;
  // Recovery timing: fault detected -> worker stopped -> moved -> started -> restored -> first step
  // (the log line: RecoveryTimeline.h).
  struct Recovery {
    Fault fault;
    RecoveryTimeline timeline;
    uint64_t restoredStep = 0;
    bool active = false;
  } recovery_;
  // A fault detected `now` (monotonic): a new timeline; `lastGoodNs` when what failed last answered.
  void beginRecovery(const Fault &fault, uint64_t now, uint64_t lastGoodNs);
  struct HandOver {
    uint64_t generation = 0, deadlineNs = 0;
    std::vector<SliceId> retiring;
    bool active = false;
  } handOver_;
  std::vector<HistoryEntry> history_;
};

} // namespace msc::exec
