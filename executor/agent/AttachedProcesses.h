// The processes attached to one contract that the agent did not start (Slurm
// tasks: slurm/). Each gets its own control page, as a rank of the agent's own
// workers does (WorkerGroup). It gets no in-memory snapshot tier: that tier
// outlives a worker so that its restart finds the newest snapshot in memory,
// and an attached process is never restarted in its contract (Slurm starts a
// new step, and the contract is released with the old one), so it would only
// hold memory. The agent cannot hand a file descriptor to a process through an
// environment, so the process takes these from the agent itself (pidfd_getfd,
// as root: slurmstepd's task_init_privileged). The agent watches their beats as
// the supervisor watches its workers' and kills one that beat and then fell
// silent for the plan's heartbeat × misses: restarting is the launcher's
// business, and a killed task ends the step, where a hung one would hold the
// nodes until the job's time limit.
#pragma once

#include "plan/plan.pb.h"
#include "worker/ControlPage.h"

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

// A file descriptor of the agent that an attached process is to take, and the
// variable naming it there.
struct HandedFd {
  std::string variable; // "MSCALE_CONTROL_FD"
  int agentFd = -1;
};

class AttachedProcesses {
public:
  struct Process {
    pid_t pid = 0;
    int pidfd = -1; // readable once the process has exited: no pid reuse can
                    // fool the watch
    std::unique_ptr<worker::ControlPageHost> control;
    uint64_t lastBeats = 0;
    uint64_t lastBeatNs = 0;
    bool killed = false; // SIGKILLed for silence; forgotten once it has gone
  };
  // What tick() saw, for the agent's log and the contract's history.
  struct Event {
    pid_t pid = 0;
    bool hung = false; // killed for silence; otherwise it ended
    std::string text;
  };

  explicit AttachedProcesses(const plan::FaultTolerance &ft);
  ~AttachedProcesses();
  AttachedProcesses(const AttachedProcesses &) = delete;
  AttachedProcesses &operator=(const AttachedProcesses &) = delete;

  // How many processes one contract watches at most: each holds two of the agent's descriptors, and
  // anyone the agent's socket lets in may attach their own processes.
  static constexpr size_t kMaxProcesses = 1024;

  // Starts watching `pid` and returns the fds it is to take (its control page). Attaching a process
  // again gives it a new page. Null with `error` (also when kMaxProcesses are watched).
  std::optional<std::vector<HandedFd>> attach(pid_t pid, uint64_t nowNs, std::string &error);
  // Stops watching `pid` (its attach could not be completed).
  void detach(pid_t pid);
  // Forgets the processes that ended and kills the ones that stopped beating.
  std::vector<Event> tick(uint64_t nowNs);
  uint64_t nextWakeNs(uint64_t nowNs) const;
  const std::vector<Process> &processes() const { return processes_; }
  uint64_t hangAfterNs() const { return hangAfterNs_; }

private:
  void forget(size_t index);

  uint64_t heartbeatNs_, hangAfterNs_, sampleNs_;
  uint32_t misses_;
  std::vector<Process> processes_;
};

} // namespace msc::exec
