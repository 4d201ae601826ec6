// The warm standby of a supervised contract (plan fault_tolerance.standby_worker): a worker process
// for the next attempt, started while the job runs, that starts up, allocates its state and waits
// (WorkerApi.h: takeOver). After a fault it is handed the job instead of a cold start, so that
// neither exec nor allocating the state is on the path from the fault to the first resumed step.
//
// This class decides when a standby is started, whether it may take over and what happens when one
// ends unasked; the processes and their control pages are the WorkerGroup's.
//   - Started once the attempt runs steady (every rank has reported a step, no fault or recovery in
//     flight, a restart left in the budget), never while the worker restores: it would compete for
//     the same CPUs and memory bandwidth.
//   - It takes over when it can be given the environment a cold start would get now. What changed
//     since it started is handed over with the job, but only the placement of a device runtime the
//     standby had not loaded when it began to wait (a move off a lost GPU: CUDA_VISIBLE_DEVICES and
//     MSCALE_GPU_*, before libcuda is loaded; an RDMA failover: MSCALE_RDMA*, before libibverbs).
//     Any other change (CPUs, pools, fds) makes it stale: it is discarded (checked once per
//     heartbeat, and at the restart) and the worker starts cold.
//   - A standby that ends before it is needed, or beats before it has the job (a program that does
//     not wait in takeOver), is a warning; when another is started, and when none is again:
//     supervise/StandbySchedule.h.
#pragma once

#include "executor/core/Logger.h"
#include "executor/Session.h"
#include "executor/WorkerGroup.h"
#include "executor/supervise/StandbySchedule.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

// The rule of take-over: what a standby started with `startedWith` must be given to run with `now`
// (each differing variable, unset where `now` lacks it) into `changes`; else why it cannot be.
// Only the placement of a device runtime it had not loaded (`loaded`: mscale::worker::kRuntime*)
// may change, and only for a standby that waits (`waiting`: what it loaded is known). The inherited
// fds are the entry kInheritedFdsKey.
inline constexpr const char *kInheritedFdsKey = "(inherited fds)";
std::optional<std::string> standbyChanges(const std::map<std::string, std::string> &startedWith,
                                          const std::map<std::string, std::string> &now, bool waiting,
                                          uint32_t loaded, worker::ControlPageHost::Environment &changes);

class WarmStandby {
public:
  // `attemptEnvironment(n)`: the variables the supervisor gives attempt n as a restart, without
  // the restart reason (the standby learns that when it takes over).
  using AttemptEnvironment = std::function<std::map<std::string, std::string>(uint32_t attempt)>;

  WarmStandby(Session &session, Logger &log, WorkerGroup &group, AttemptEnvironment attemptEnvironment);

  // Whether the plan asks for a standby and it can work: a command to run, control pages to wait on.
  bool enabled() const;
  // The supervisor's tick. `steady`: the attempt runs and may be stood by for (see above);
  // `nextAttempt`: the attempt a standby started now would become.
  void tick(uint64_t nowNs, bool steady, uint32_t nextAttempt, const std::vector<std::string> &command);
  // At a restart of attempt `attempt`: hands the job to the standby when it fits. True: the standby
  // runs as the new attempt; false: the caller starts the worker cold (a stale standby is discarded).
  bool takeOver(uint32_t attempt, const std::string &restartReason, uint64_t nowNs);
  // A reaped pid: true when it was a standby (logged; an unasked end counts as a failure).
  bool exited(pid_t pid, int waitStatus, uint64_t nowNs);
  // Kills the standby (the job ends or no longer wants it), saying why in the log.
  void discard(const std::string &why);
  std::vector<pid_t> pids() const { return group_.standbyPids(); }

private:
  // What a worker started now for `attempt` would get: the appliers' variables and fds under the
  // attempt's own variables (the launcher's precedence).
  std::map<std::string, std::string> basis(uint32_t attempt) const;
  // The variables the standby must be given to become attempt `attempt`'s worker, into `changes`;
  // else why it cannot be. `waiting`: it waits now (what it has loaded is known).
  std::optional<std::string> stale(uint32_t attempt, bool waiting,
                                   worker::ControlPageHost::Environment &changes) const;
  void failed(const std::string &what, uint64_t nowNs);

  Session &session_;
  Logger &log_;
  WorkerGroup &group_;
  AttemptEnvironment attemptEnvironment_;
  std::map<std::string, std::string> startedWith_; // basis() of the standby's attempt when it started
  uint32_t attempt_ = 0;                           // the attempt it stands by for
  StandbySchedule schedule_;
  bool announced_ = false; // its "ready" line is logged
};

} // namespace msc::exec
