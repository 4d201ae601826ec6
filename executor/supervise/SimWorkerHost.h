// A model of worker processes, for the supervisor in virtual time (unit tests, the cluster
// simulator): no fork, no signal, no wait. A worker it starts gets a pid of the model's own, above
// any the kernel hands out, so that nothing can ever signal a real process by mistake; its control
// page (MSCALE_CONTROL_FD in its environment, a memfd of this process) is mapped, and the driver
// makes the worker beat, step, restore and end through this class, as a training process would
// through worker/WorkerApi.h.
//
// Ends are the model's to report: a signal or an exit marks the worker ended, and the driver hands
// each end to the supervisor (Supervisor::onWorkerExit) as a reaper of real processes would.
#pragma once

#include "executor/supervise/WorkerHost.h"
#include "worker/WorkerApi.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

class SimWorkerHost final : public WorkerHost {
public:
  static constexpr pid_t kFirstPid = 1 << 23; // above the kernel's largest pid_max (2^22)

  struct Worker {
    pid_t pid = -1;
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;
    std::string label;
    mscale::worker::ControlPage *page = nullptr; // null when it was started without one
    std::optional<int> status;                  // its waitpid status, once it ended
    bool reported = false;                      // its end was handed to the supervisor
    bool ignoresSigterm = false;                // a rank that will not leave its collective
    int policy = 0;                             // its scheduling (SCHED_IDLE while a standby)
    std::vector<int> signals;                   // every signal it was sent, in order
  };

  SimWorkerHost() = default;
  ~SimWorkerHost() override;
  SimWorkerHost(const SimWorkerHost &) = delete;
  SimWorkerHost &operator=(const SimWorkerHost &) = delete;

  // --- WorkerHost ---------------------------------------------------------------------------
  pid_t start(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
              const std::vector<int> &fds, const std::string &label, DiagnosticEngine &diags) override;
  void signal(pid_t pid, int sig) override;
  void killWorkers(const std::vector<pid_t> &sparing) override;
  void killTrees(const std::vector<pid_t> &roots) override;
  bool ended(pid_t pid) const override;
  bool exiting(pid_t pid) const override { return false; }
  void reap(pid_t pid) override;
  void setScheduling(pid_t pid, int policy, int priority) override;
  void exited(pid_t pid) override;

  // --- the workers' side ----------------------------------------------------------------------
  // A heartbeat at `step` (kStepRestoring while restoring), as WorkerApi.h's heartbeat() writes it.
  void beat(pid_t pid, uint64_t step);
  // What it says of its failure before exiting, as WorkerApi.h's failed() says it.
  void sayFailed(pid_t pid, mscale::worker::Failure kind, const std::string &line = {});
  // The worker exits with `code`.
  void exit(pid_t pid, int code);
  // Ends not yet handed to the supervisor, in the order they happened; each is marked reported.
  std::vector<std::pair<pid_t, int>> takeEnds();

  // Makes the next start fail (a launch error: ERR_EXEC_009), once.
  void failNextStart() { failNextStart_ = true; }
  // In start order; a reference to one stays valid while more are started.
  const std::deque<Worker> &workers() const { return workers_; }
  Worker *find(pid_t pid);
  // The workers that run now (started, not ended), in start order.
  std::vector<pid_t> running() const;

private:
  void end(Worker &w, int status);
  std::deque<Worker> workers_;
  std::vector<pid_t> endOrder_;
  pid_t nextPid_ = kFirstPid;
  bool failNextStart_ = false;
};

} // namespace msc::exec
