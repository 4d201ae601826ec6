// What the supervisor does to worker processes, behind one interface, so that its decisions run
// with or without them: on a node the contract's own processes (executor/SessionWorkerHost: started
// gated into the contract's cgroups, signalled, killed with their children, reaped), in virtual
// time a model of them (SimWorkerHost). The ranks' control pages are not behind it: they are shared
// memory the supervisor reads either way (worker/ControlPage.h).
#pragma once

#include "support/Diagnostic.h"

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace msc::exec {

class WorkerHost {
public:
  virtual ~WorkerHost() = default;

  // Starts one worker: `argv` with `env` added to the contract's environment and `fds` inherited;
  // `label` names it in log lines ("rank 1", "standby"; "" for a single worker). Its pid, or -1
  // with a diagnostic reported.
  virtual pid_t start(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
                      const std::vector<int> &fds, const std::string &label, DiagnosticEngine &diags) = 0;
  virtual void signal(pid_t pid, int sig) = 0;
  // SIGKILL to every worker this host started and has not been told ended, and to everything they
  // started; those in `sparing` (a warm standby) and their children live on.
  virtual void killWorkers(const std::vector<pid_t> &sparing) = 0;
  // SIGKILL to `roots` and everything they started.
  virtual void killTrees(const std::vector<pid_t> &roots) = 0;
  // Whether `pid` has ended, without reaping it: its end is still reported to whoever reaps.
  virtual bool ended(pid_t pid) const = 0;
  // Whether the kernel is tearing `pid` down (killed, its exit status on the way).
  virtual bool exiting(pid_t pid) const = 0;
  // Waits for `pid`, which was killed, to end, and reaps it.
  virtual void reap(pid_t pid) = 0;
  // The scheduling of `pid` and all its threads (SCHED_IDLE for a standby).
  virtual void setScheduling(pid_t pid, int policy, int priority) = 0;
  // `pid` was reaped: it is no longer one of this host's workers.
  virtual void exited(pid_t pid) = 0;
};

} // namespace msc::exec
