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
//   - It takes over only when it was started with exactly the environment a cold start would get
//     now. A move off a lost GPU, an RDMA failover or a resize changes that environment: such a
//     standby is discarded (checked once per heartbeat, and at the restart) and the worker starts cold.
//   - A standby that ends before it is needed, or beats before it has the job (a program that does
//     not wait in takeOver), is a warning; after kMaxStandbyFailures no standby is started again.
#pragma once

#include "executor/Logger.h"
#include "executor/Session.h"
#include "executor/WorkerGroup.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace msc::exec {

class WarmStandby {
public:
  static constexpr unsigned kMaxStandbyFailures = 3;

  // `attemptEnvironment(n)`: the variables the supervisor gives attempt n as a restart, without
  // the restart reason (the standby learns that when it takes over).
  using AttemptEnvironment = std::function<std::map<std::string, std::string>(uint32_t attempt)>;

  WarmStandby(Session &session, Logger &log, WorkerGroup &group, AttemptEnvironment attemptEnvironment);

  // Whether the plan asks for a standby and it can work: a command to run, control pages to wait on.
  bool enabled() const;
  // The supervisor's tick. `steady`: the attempt runs and may be stood by for (see above);
  // `nextAttempt`: the attempt a standby started now would become.
  void tick(uint64_t nowNs, bool steady, uint32_t nextAttempt, const std::vector<std::string> &command,
            const RankLauncher &launch);
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
  void failed(const std::string &what, uint64_t nowNs);

  Session &session_;
  Logger &log_;
  WorkerGroup &group_;
  AttemptEnvironment attemptEnvironment_;
  std::map<std::string, std::string> startedWith_; // basis() of the standby's attempt when it started
  uint32_t attempt_ = 0;                           // the attempt it stands by for
  unsigned failures_ = 0;
  bool off_ = false;
  uint64_t retryAtNs_ = 0, nextCheckNs_ = 0;
};

} // namespace msc::exec
