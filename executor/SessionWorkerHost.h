// The worker processes of one contract on this node, as the supervisor's rooms see them
// (supervise/WorkerHost.h): started gated into the session's cgroups and affinity, signalled with
// kill(2), killed with their children (cgroup.kill where the contract has a cgroup2 directory, else
// found in /proc: ProcessTree.h), looked at with waitid(WNOWAIT) and reaped with waitpid. With a
// WorkerOutput, each worker's stdout and stderr go to its file there, by rank and attempt
// (MSCALE_ATTEMPT, which the supervisor sets in every attempt's environment).
#pragma once

#include "executor/Session.h"
#include "executor/WorkerOutput.h"
#include "executor/supervise/WorkerHost.h"

namespace msc::exec {

class SessionWorkerHost final : public WorkerHost {
public:
  explicit SessionWorkerHost(Session &session, WorkerOutput *output = nullptr) : session_(session), output_(output) {}

  pid_t start(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
              const std::vector<int> &fds, const std::string &label, DiagnosticEngine &diags) override;
  void signal(pid_t pid, int sig) override;
  void killWorkers(const std::vector<pid_t> &sparing) override;
  void killTrees(const std::vector<pid_t> &roots) override;
  bool ended(pid_t pid) const override;
  bool exiting(pid_t pid) const override;
  void reap(pid_t pid) override;
  void setScheduling(pid_t pid, int policy, int priority) override;
  void exited(pid_t pid) override;

private:
  Session &session_;
  WorkerOutput *output_;
};

} // namespace msc::exec
