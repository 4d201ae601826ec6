// The supervisor of one contract's worker, or of the ranks of one job (mscale-exec run
// --nproc-per-node N: executor/WorkerGroup). It composes the rooms of supervise/, each one decision
// over an injected clock, with the session (appliers, device backends) and the worker processes:
//   - DeviceProbes: heartbeats on every GPU slice and RDMA queue-pair group;
//   - Liveness: each rank's beats on its control page (a hang);
//   - RestartPolicy: whether and when a failed attempt restarts (budget, back-off), with the warm
//     standby (executor/WarmStandby over supervise/StandbySchedule) taking the cold start's place;
//   - ResizeController: the density/temperature monitor that resizes GPU slices while the worker
//     runs (hand-over: the new slice exists before the old one is released);
//   - DeviceFailover: where a lost GPU's slices go; an RDMA failover is the session's.
// The supervisor reads (pages, backends), asks the rooms, and acts (signals, restarts, hand-overs).
// Everything it decides goes to the log with its reason and numbers, and to history().
//
// Ranks: the group is the job. A rank that crashes, hangs (no beats on *its* page) or exits non-zero
// is a fault of the job: the other ranks are stopped (SIGTERM, SIGKILL after a short grace) and,
// when the plan has a recovery point, every rank is restarted (they agree among themselves on the
// snapshot step to resume). The job completes when every rank has exited 0. A single worker (no
// --nproc-per-node) is a group of one without the rank environment, and its log lines name no rank.
#pragma once

#include "admission/PlanRecheck.h"
#include "executor/core/Logger.h"
#include "executor/RecoveryTimeline.h"
#include "executor/Session.h"
#include "executor/WarmStandby.h"
#include "executor/WorkerGroup.h"
#include "executor/WorkerOutput.h"
#include "support/Clock.h"
#include "executor/supervise/DeviceProbes.h"
#include "executor/supervise/Fault.h"
#include "executor/supervise/Liveness.h"
#include "executor/supervise/ResizePolicy.h"
#include "executor/supervise/RestartPolicy.h"
#include "executor/supervise/WorkerHost.h"
#include "hal/Topology.h"

#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

struct SupervisorOptions {
  std::vector<std::string> command;  // empty: the contract holds resources only (no worker to supervise)
  // What the supervisor decides by: the system's clocks on a node, a ManualClock in virtual time.
  const Clock *clock = &SystemClock::instance();
  // What it does to worker processes: null for the session's own (SessionWorkerHost); a model of
  // them (supervise/SimWorkerHost.h) in virtual time.
  WorkerHost *host = nullptr;
  // Where the session's workers' output is kept by rank and attempt (the agent's); null: the
  // executor's own stdout and stderr (mscale-exec run, a terminal). Its last line names a crash.
  WorkerOutput *output = nullptr;
  std::map<std::string, std::string> environment; // extra worker environment (the submitter's)
  uint32_t maxRestarts = 10;
  // Program faults in a row at the same step that stop the job as a crash loop (ERR_EXEC_029; 0: never).
  uint32_t crashLoopAfter = 3;
  // Back-off between restarts of attempts that fail without progress (supervise/RestartPolicy.h):
  // from one heartbeat, doubling, up to this.
  uint64_t restartBackoffMaxNs = 5'000'000'000;
  bool resumeAfterNodeLoss = false; // the first worker resumes: an executor before this one was lost
  // Ranks of one job (--nproc-per-node N, like torchrun): 0 is a single worker without the rank
  // environment; N >= 1 starts N ranks with RANK, WORLD_SIZE, MASTER_ADDR/PORT, ...
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
  // True while the node keeps the worker stopped (a borrower frozen while nothing is lent to it):
  // its silence is no hang, and its liveness starts afresh when it runs again. Unset: never.
  std::function<bool()> paused;
  // Called when a fault is detected, before the worker is stopped and anything of the recovery
  // starts (the agent's lending takes back what the contract lent: NodeLending::holdForRecovery).
  std::function<void()> faulted;
};

struct HistoryEntry {
  int64_t unixMs = 0;
  std::string kind;    // "fault", "recovered", "resize", "held", "refused", "gave-up", "reassigned"
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
  // Supervision ended while no worker ran (a restart waiting out its back-off could not start, or a
  // forwarded signal cancelled it): the final status, as onWorkerExit would have returned it.
  std::optional<int> finished() const { return finished_; }
  void forwardSignal(int sig);
  // A resize asked for by hand: `next` is this contract's plan compiled anew (another profile).
  // Only GPU slices and the scaling policy may differ. False with `error` (nothing changed).
  bool resizeTo(const plan::Plan &next, const std::string &why, std::string &error);

  // Releases what a hand-over in progress still holds (before the session is released).
  void shutdown();

  const std::vector<HistoryEntry> &history() const { return history_; }
  const WorkerGroup &workers() const { return group_; }
  // ---- a planned stop (a drain: the job moves to other nodes at a snapshot boundary) ----
  // Asks every rank to stop after `step` (0 withdraws the ask); a new attempt (a restart) is asked
  // the same. Logged once per step asked.
  void requestStopAfter(uint64_t step);
  // The step every rank of the running attempt has completed (nullopt before each reported one).
  std::optional<uint64_t> jobStep() const { return attemptStep(); }
  // The attempt's time a step, from its first reported step to its newest (nullopt before two).
  std::optional<uint64_t> stepNs() const;
  // The step every rank stopped after, as their pages say (WorkerGroup::stoppedAt).
  std::optional<uint64_t> stoppedAt() const { return group_.stoppedAt(); }
  // ---- a new placement of the job that keeps this node (issue 29: a world size changed) ----
  // The job was placed anew and this node keeps it, with the variables of its new place
  // (`environment`: the rank, the world size and rendezvous, the rank's share of the batch): the
  // running attempt is stopped (SIGTERM, SIGKILL after the grace) and the next one starts with them
  // as the placement's first worker does (it restores what it finds: no MSCALE_RESUME), without a
  // fault and without spending the restart budget; MSCALE_RESTART_REASON says "reassigned". What
  // this node had stays: the applied session and the memory tiers, so a survivor that holds the
  // step the job resumes from restores it from memory instead of disk. A standby stood by for the
  // old place is discarded (it started with the old place's variables) and another stands by once
  // the new attempt runs steady. The old placement's planned stop is withdrawn. Supervision that
  // had ended (a planned stop completed, the job gave up) starts again. False with `error` when
  // nothing can be kept: the plan has no recovery point or runs no worker (the caller releases and
  // admits anew).
  bool reassign(std::map<std::string, std::string> environment, const std::string &why, std::string &error);
  // Attempts started by a new placement of the job (reassign).
  uint32_t reassignments() const { return reassignments_; }
  // The warm standby's processes (plan fault_tolerance.standby_worker), not yet reaped: whoever
  // reaps the workers reaps these too and reports them through onWorkerExit(pid, ...).
  std::vector<pid_t> standbyPids() const { return standby_.pids(); }
  // The monitor's latest sample of each GPU slice (status reads these: sampling advances a window).
  std::vector<Session::GpuSample> lastSamples() const;

private:
  struct SliceWatch;
  // Starts every rank (one worker when there are no ranks) of a new attempt: a restart (it must
  // resume: MSCALE_RESUME) when `restartReason` is set, unless `resume` says otherwise.
  bool startWorker(DiagnosticEngine &diags, const std::string &restartReason,
                   std::optional<bool> resume = std::nullopt);
  // The number of the next attempt started: one per restart and per reassignment.
  uint32_t attemptNumber() const { return restarts_.restarts() + reassignments_; }
  // The attempt of a new placement (reassign), once the old one's ranks have all ended.
  std::optional<int> startReassigned(uint64_t now, DiagnosticEngine &diags);
  // The variables of attempt `attempt` (a restart when `restart`), without the restart reason.
  std::map<std::string, std::string> attemptEnvironment(uint32_t attempt, bool restart) const;
  // Whether the running attempt may be stood by for now (WarmStandby::tick).
  bool steadyForStandby() const;
  // Every rank of an attempt has ended: completion, a recovery, or the end of supervision (and of
  // the standby with it).
  std::optional<int> finishAttempt(uint64_t now, DiagnosticEngine &diags);
  std::optional<int> endAttempt(uint64_t now, DiagnosticEngine &diags);
  void probeDevices(uint64_t now); // the devices' heartbeats (GPU slices, RDMA ports): once per heartbeat
  void sampleBeats(uint64_t now);  // the workers' beats: several samples per heartbeat (supervise/Fault.h)
  void monitorTick(uint64_t now);
  void handOverTick(uint64_t now);
  // A fault found while the worker runs; `lastGoodNs`: when what failed last answered (0 unknown).
  void raise(Fault fault, uint64_t now, uint64_t lastGoodNs);
  // After the worker of a fault has ended: move what must move, restart (now or after the
  // back-off). False: stop with `status`.
  bool recover(const Fault &fault, DiagnosticEngine &diags, int &status);
  // The restart itself: the standby takes over, or every rank starts cold.
  bool restart(const std::string &what, DiagnosticEngine &diags);
  void restartAfterBackoff(uint64_t now);
  bool moveOffLostGpu(unsigned gpu, DiagnosticEngine &diags);
  bool resize(size_t entry, unsigned toSlices, const std::string &why, uint64_t now);
  // Re-check, diff, hand over: the common path of policy and manual resizes.
  bool handOverTo(const plan::Plan &next, const std::optional<hal::Topology> &node, const std::string &head,
                  const std::string &why, uint64_t now, std::string &error);
  std::optional<hal::Topology> loadNode(DiagnosticEngine &diags) const;
  void resetControllers();
  void record(const std::string &kind, const std::string &text);
  // "step 64", or "restore" while the worker restores: of `rank`, else of the job (the step every rank has done).
  std::string stepText(std::optional<unsigned> rank = std::nullopt) const;
  std::string rankText(std::optional<unsigned> rank) const; // " (rank 1)" where there are several, else ""
  std::string detectionPeriod() const; // "3 heartbeats 200.0 ms apart"
  void noteProgress(uint64_t now);
  // A new attempt runs from `now`: nobody has beaten, no step is done yet.
  void attemptStarted(uint64_t now);
  // The attempt completed a step past the first one it reported (the one it resumed from).
  bool attemptSteppedOn() const;
  // The step the current attempt has reached, once it reported one (read from the control pages).
  std::optional<uint64_t> attemptStep() const;

  Session &session_;
  Logger &log_;
  SupervisorOptions options_;
  const Clock &clock_;
  std::unique_ptr<WorkerHost> sessionHost_; // when the options name no host
  WorkerHost &host_;
  WorkerGroup group_; // the ranks (one for a single worker): pids, control pages, memory tiers
  WarmStandby standby_;
  RestartPolicy restarts_;
  DeviceProbes probes_;
  Liveness liveness_;
  std::optional<Fault> pendingFault_;   // this attempt failed: the ranks still running are being stopped
  // A rank said a restart cannot help (nothing to resume: ERR_EXEC_022; RetryCannotFix: ERR_EXEC_030).
  struct GiveUp {
    unsigned rank;
    WorkerGroup::SaidFailure said;
  };
  std::optional<GiveUp> giveUp_;
  bool stopping_ = false;               // a forwarded signal: the worker's end is not a fault
  // A new placement (reassign) and why: the running ranks are being stopped to start at it.
  std::optional<std::string> reassigning_;
  uint32_t reassignments_ = 0;
  std::optional<int> finished_;         // see finished()
  uint64_t heartbeatNs_, windowNs_, hangAfterNs_, startWithinNs_;
  uint32_t misses_;
  uint64_t beatSampleNs_;
  uint64_t nextHeartbeat_ = UINT64_MAX, nextBeatSample_ = UINT64_MAX, nextWindow_ = UINT64_MAX; // set by start()
  uint64_t attemptStartedNs_ = 0;
  std::optional<uint64_t> attemptFirstStep_;
  uint64_t attemptFirstStepNs_ = 0;                          // when attemptFirstStep_ was seen
  std::pair<uint64_t, uint64_t> attemptNewestStep_{0, 0};    // (step, when first seen) of the newest
  uint64_t stopAfter_ = 0;                                   // the planned stop asked (0: none)
  std::vector<SliceWatch> slices_;
  std::map<size_t, Session::GpuSample> lastSamples_;
  // A restart waiting out its back-off (RestartPolicy): what failed, and when it starts.
  struct PendingRestart {
    std::string what;
    uint64_t atNs = 0;
  };
  std::optional<PendingRestart> pendingRestart_;
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
