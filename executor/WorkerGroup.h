// The ranks of one job on this node (`mscale-exec run --nproc-per-node N`, like torchrun): each rank is
// a worker process with its own control page and its own memory-tier memfd, so that ranks never share
// a snapshot region and a rank's heartbeats say whether *that* rank makes progress. The group starts,
// stops and restarts as one; the supervisor (executor/Supervisor) decides when.
//
// Lifetime: the pages and memfds are made once per job (prepare) and outlive every attempt: the
// memory tier must survive the rank it protects. Processes are started, signalled and killed
// through the WorkerHost (the session's on a node: gated into the contract's cgroups; a model in
// virtual time) and reaped by whoever waits for them (the supervisor), which reports each end back
// with exited().
#pragma once

#include "executor/supervise/Liveness.h"
#include "executor/supervise/WorkerHost.h"
#include "support/Diagnostic.h"
#include "worker/ControlPage.h"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

// At most this many ranks per node: more than any node has cores for, small enough that a typo
// (--nproc-per-node 1000) is refused instead of forking a thousand interpreters.
constexpr unsigned kMaxRanksPerNode = 256;

// A free TCP port on 127.0.0.1 (the kernel's choice, bound and released), other than `avoid`: a
// restarted group must not meet the previous attempt's rendezvous port, which may linger in
// TIME_WAIT or in a rank that has not let go yet. nullopt with `error` when no socket can be had.
std::optional<uint16_t> freeLoopbackPort(uint16_t avoid, std::string &error);

class WorkerGroup final : public BeatSource {
public:
  struct Rank {
    unsigned index = 0;
    pid_t pid = -1;                                  // -1 once reaped (or before the first start)
    std::optional<int> status;                       // this attempt's waitpid status, once reaped
    std::unique_ptr<worker::ControlPageHost> control; // null when no page could be made
    int memoryTierFd = -1;
  };

  // `size` ranks on `host`; `rankEnvironment`: export RANK, WORLD_SIZE, MASTER_ADDR/PORT, ... (asked
  // for with --nproc-per-node; a plain single worker gets none of them).
  WorkerGroup(WorkerHost &host, unsigned size, bool rankEnvironment);
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup &) = delete;
  WorkerGroup &operator=(const WorkerGroup &) = delete;

  // Once per job: each rank's control page and, with `memoryTier`, its memory-tier memfd. What
  // cannot be had is only a warning (that rank is supervised by its exit alone): `warnings`.
  void prepare(bool memoryTier, std::vector<std::string> &warnings);
  // Starts every rank with `env` plus its own variables (pages, memfd, rank environment with a new
  // MASTER_PORT). False when one cannot start: the ranks already started are sent SIGKILL (their
  // reaping is left to the owner of the processes, as for any other end).
  bool start(const std::vector<std::string> &command, const std::map<std::string, std::string> &env,
             DiagnosticEngine &diags);
  // A waited-for pid ended: records its status, tells the host, and returns its rank; nullopt when
  // not one of ours.
  std::optional<unsigned> exited(pid_t pid, int waitStatus);

  // Asks the running ranks to stop: SIGKILL to `killNow` (a hung rank will not act on SIGTERM),
  // SIGTERM to the others so they can leave their collectives and files cleanly. Ranks still running
  // at `deadlineNs` are the caller's to kill (graceExpired).
  void stop(std::optional<unsigned> killNow, uint64_t deadlineNs);
  // True once, when a stop's grace is over and ranks still run.
  bool graceExpired(uint64_t nowNs);
  uint64_t stopDeadlineNs() const { return stopDeadlineNs_; }
  // Sends `sig` to every running rank.
  void signalAll(int sig);

  unsigned size() const { return unsigned(ranks_.size()); }
  bool ranked() const { return rankEnvironment_; }
  const Rank &rank(unsigned r) const { return ranks_[r]; }
  bool running() const;                          // some rank has not been reaped
  std::vector<pid_t> runningPids() const;
  bool allCompleted() const;                     // every rank exited 0 in this attempt
  // The status mscale-exec returns for an attempt that did not complete: `preferred`'s (the rank a
  // fault named) when it ended, else the first rank's, in rank order, that did not exit 0.
  int failingStatus(std::optional<unsigned> preferred) const;
  uint16_t masterPort() const { return masterPort_; }

  // The ranks' pages, for the liveness room (supervise/Liveness.h): a rank's beats while it runs,
  // whether it said it is finishing, whether the kernel tears it down (ProcessTree.h).
  unsigned ranks() const override;
  std::optional<uint64_t> beats(unsigned r) const override;
  bool finishing(unsigned r) const override;
  // What rank `r` said of its failure through its control page (WorkerApi.h: failed()): the kind
  // decides whether a restart can help, the line goes into the log and the status.
  struct SaidFailure {
    mscale::worker::Failure kind = mscale::worker::Failure::None;
    std::string line;
  };
  SaidFailure failureSaid(unsigned r) const;
  bool exiting(unsigned r) const override;
  bool hasPages() const;
  // The step of `rank`, or of the job (the step every rank has done; kStepRestoring while any rank
  // restores). 0 without pages.
  uint64_t step(std::optional<unsigned> rank) const;
  // The job's step once every rank has beaten in this attempt; nullopt before (or without pages).
  std::optional<uint64_t> commonStep() const;
  // A planned stop (a drain; WorkerApi.h: stopAfter): every rank's page asks it to stop after
  // `step` with that step's snapshot on disk (0 withdraws the ask). Nothing without pages.
  void requestStopAfter(uint64_t step);
  // The step every rank stopped after, once each said so on its page; nullopt before, when they
  // differ, or without pages.
  std::optional<uint64_t> stoppedAt() const;
  // Sum of the ranks' own TFLOP/s figures (they share the plan's GPU slices).
  double reportedTflops() const;
  // Slice hand-over notices, to every rank's page. The pages' generations move in lockstep (every
  // notice goes to all of them), so one generation names the notice; 0 when it does not fit.
  uint64_t publishSlices(const std::string &slices);
  // Every running rank took notice `generation` (when none runs: every rank did); false without pages.
  bool acknowledged(uint64_t generation) const;

  // ---- the warm standby (plan fault_tolerance.standby_worker) ------------------------------------
  // One standby process per rank, started ahead of a fault with the environment of the next attempt
  // (`env`, as start() takes it) plus MSCALE_STANDBY=1 and a control page of its own, on which it
  // waits with its state allocated (WorkerApi.h: takeOver). False when one cannot start: the others
  // are killed (reaped like any standby: standbyPids, standbyExited).
  bool startStandby(const std::vector<std::string> &command, const std::map<std::string, std::string> &env,
                    uint64_t nowNs, DiagnosticEngine &diags);
  bool hasStandby() const { return !standbys_.empty(); } // a standby for every rank, none ended
  bool standbyWaiting() const;         // every standby has started up and waits for the job
  uint32_t standbyRuntimes() const;    // the device runtimes any waiting standby had loaded
  bool standbyBeat() const;            // a standby beat: it ran the job's loop before it had the job
  bool standbyAlive() const;           // no standby of the set has ended (reaped or not)
  uint64_t standbyStartedNs() const { return standbyStartedNs_; }
  // The standbys become the ranks of a new attempt and are handed the job with `environment` to
  // apply first (ControlPageHost::fits). Each standby's page takes the place of its rank's
  // (continuing its step and notice generation); the old page is kept for the next standby. Needs
  // hasStandby() and no rank running.
  void takeOverStandby(const worker::ControlPageHost::Environment &environment);
  // SIGKILL to every standby and what it started (its pages are not reused before); they are
  // reaped as they end, or by reapDiscardedStandbys.
  void discardStandby();
  // Waits for the standbys killed and not reaped yet: supervision is over.
  void reapDiscardedStandbys();
  std::vector<pid_t> standbyPids() const; // standbys not reaped yet: waiting, or killed
  std::vector<pid_t> liveStandbyPids() const; // the standby set up now, in rank order
  // A waited-for pid ended: nullopt when it was no standby; true when it had been killed
  // (discardStandby), false when it ended on its own, and then the rest of its set is killed: the
  // job needs a standby for every rank.
  std::optional<bool> standbyExited(pid_t pid);

private:
  // A loopback port other than masterPort_ (the running or the previous attempt's) into `port`;
  // ERR_EXEC_009 naming `what` when none can be had.
  bool newMasterPort(const std::vector<std::string> &command, const char *what, uint16_t &port,
                     DiagnosticEngine &diags) const;
  // The environment and inherited fds of rank `r`'s process on `page` with MASTER_PORT `port`.
  std::map<std::string, std::string> rankVariables(const Rank &r, const worker::ControlPageHost *page, uint16_t port,
                                                   const std::map<std::string, std::string> &env,
                                                   std::vector<int> &fds) const;

  WorkerHost &host_;
  std::vector<Rank> ranks_;
  bool rankEnvironment_;
  uint16_t masterPort_ = 0;
  uint64_t stopDeadlineNs_ = UINT64_MAX;

  struct Standby {
    pid_t pid = -1;
    std::unique_ptr<worker::ControlPageHost> control;
  };
  std::vector<Standby> standbys_;          // one per rank while a set is up, else empty
  std::vector<pid_t> endingStandbys_;      // killed, not reaped yet
  std::vector<std::unique_ptr<worker::ControlPageHost>> sparePages_; // for the next standbys
  uint16_t standbyMasterPort_ = 0;
  uint64_t standbyStartedNs_ = 0;
};

} // namespace msc::exec
