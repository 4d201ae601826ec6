// One contract on one node: its appliers (applied in order, all-or-nothing, rolled back in
// reverse), the worker environment they fill, and the worker process (started gated so it is in
// its cgroups and pinned before it runs a single instruction of its own).
#pragma once

#include "executor/core/Applier.h"
#include "executor/host/HostAppliers.h"
#include "executor/gpu/GpuBackend.h"
#include "hal/Topology.h"
#include "executor/core/Logger.h"
#include "executor/NodeConfig.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

class GpuBackend;
class RdmaBackend;

struct SessionOptions {
  ApplierOptions appliers;
  std::shared_ptr<const hal::Topology> topology; // the live node (the sim backends model it)
  NodeConfig config;
  FailureInjection inject;
  // Run after the appliers' attach, before the worker execs (its pid): confinement the plan's
  // appliers do not know of (a borrower's cgroups, which the node's lending moves). False with `error`.
  std::function<bool(pid_t, std::string &)> confine;
};

// What the supervisor watches: the GPU slices and RDMA queue-pair groups a session holds.
struct HeldSlice {
  int planIndex = 0;
  std::string role;
  unsigned gpu = 0;
  SliceId id = 0;
};
struct HeldQpGroup {
  int planIndex = 0;
  std::string role;
  uint64_t id = 0;
  std::string device;
  unsigned port = 0;
};

class Session {
public:
  Session(plan::Plan plan, std::string contractId, std::string planName, Logger &log, const SessionOptions &options);
  ~Session();

  // Builds the appliers the plan needs (GPU/RDMA only when it has slices/QPs; ERR_EXEC_020 when no
  // backend can serve them), then applies them in order. On failure, rolls back what was applied.
  bool apply(DiagnosticEngine &diags);
  // Starts argv in the contract (appliers' attach before exec). False with ERR_EXEC_009 / _003 / _004.
  bool startWorker(const std::vector<std::string> &argv, const std::map<std::string, std::string> &extraEnv,
                   DiagnosticEngine &diags, const std::vector<int> &extraFds = {});
  // The same for one of several workers (the ranks of a job): returns its pid, or -1. `label` names
  // it in the log ("rank 1"; empty for a single worker). The session keeps every worker it started
  // until workerExited, so release() and killWorkerTree() reach all of them. `stdioFd`: the
  // worker's stdout and stderr (-1: the executor's own).
  pid_t startWorkerProcess(const std::vector<std::string> &argv, const std::map<std::string, std::string> &extraEnv,
                           DiagnosticEngine &diags, const std::vector<int> &extraFds, const std::string &label,
                           int stdioFd = -1);
  // Binds a process the session did not start (a Slurm task) to the contract: every applied
  // applier's attach (cgroups, CPU affinity), as for the session's own workers. It is not one of
  // workerPids(): whoever started it waits for it. False with the appliers' diagnostics.
  bool attachProcess(pid_t pid, DiagnosticEngine &diags);
  // Rolls every applied applier back, in reverse order. Kills workers still running. Idempotent.
  void release(DiagnosticEngine &diags);

  bool applied() const { return applied_; }
  // The worker (the first one still running when there are several); -1 when none runs.
  pid_t workerPid() const { return workers_.empty() ? -1 : workers_.front(); }
  const std::vector<pid_t> &workerPids() const { return workers_; }
  void workerExited() { workers_.clear(); } // every worker has been waited for
  void workerExited(pid_t pid);
  // SIGKILL to the workers and to every process they started (data-loader children must not outlive
  // them and keep their files and control pages): through cgroup.kill where the contract has a
  // cgroup2 directory and the kernel has the file, else found in /proc (ProcessTree.h). The workers
  // in `sparing` (a warm standby) and their children live on: then the tree is found in /proc, since
  // cgroup.kill would take them too.
  void killWorkerTree(const std::vector<pid_t> &sparing = {});
  const std::string &contract() const { return contract_; }
  Logger &log() const { return log_; }
  const std::string &planName() const { return planName_; }
  const plan::Plan &plan() const { return plan_; }
  const WorkerEnvironment &environment() const { return env_; }
  // applier name -> what it applied
  std::vector<std::pair<std::string, std::vector<std::string>>> resources() const;
  // What the applied appliers made, typed (core/Applier.h); empty parts before apply.
  AppliedState appliedState() const;
  std::string cgroupV2() const { return appliedState().cgroup2Dir; }
  // PSI 'some avg10' of the contract's cgroup2 directory as a ratio, -1 when unknown.
  double ioWaitRatio() const;
  struct GpuSample {
    std::string role, backend;
    SliceSample sample;
  };
  // One sample per GPU slice the GPU applier holds (empty without GPU slices or backend).
  std::vector<GpuSample> gpuSamples() const;

  // --- supervision: heartbeats, hand-over, recovery (executor/Supervisor) ---------------------
  GpuBackend *gpuBackend() const { return gpu_.get(); }
  RdmaBackend *rdmaBackend() const { return rdma_.get(); }
  std::vector<HeldSlice> heldSlices() const;
  std::vector<HeldQpGroup> heldQpGroups() const;
  // Moves to `next` (this contract's plan with other GPU slices): the new slices are created while
  // the old ones still run; on success the session's plan is `next` and the old slices are in
  // `retiring` (release them with retireGpuSlices); on failure nothing changed.
  bool handOverGpuSlices(const plan::Plan &next, std::vector<SliceId> &retiring, std::vector<std::string> &changes,
                         std::string &error);
  void retireGpuSlices(const std::vector<SliceId> &ids);
  // Moves RDMA groups whose port is down to their failover ports.
  bool failOverRdma(std::vector<std::string> &moved, std::string &error);

private:
  ApplyContext context(DiagnosticEngine &diags);
  Applier *appliedNamed(llvm::StringRef name) const;
  bool buildAppliers(DiagnosticEngine &diags);

  plan::Plan plan_;
  std::string contract_, planName_;
  Logger &log_;
  SessionOptions options_;
  WorkerEnvironment env_;
  std::vector<std::unique_ptr<Applier>> appliers_;
  size_t appliedCount_ = 0;
  bool applied_ = false;
  std::vector<pid_t> workers_; // started and not yet waited for, in start order
  std::unique_ptr<GpuBackend> gpu_;
  std::unique_ptr<RdmaBackend> rdma_;
};

// Worker start, gated: the child waits on a pipe until `gate` runs (cgroups, affinity), then execs
// with exactly `env` and the inherited fds open; any other fd is closed. Signals blocked in the
// parent are unblocked in the child. Returns the pid, or -1 with `error`. `awaitExec`: returns
// once the exec has happened, so that a program that cannot be run is `error`; without it (a
// child the gate may leave frozen, a borrower's, which would hold the caller until it is lent a
// CPU) it returns at once, and a failed exec is the child's exit status 127 with its reason on
// the child's stderr.
pid_t spawnGated(const std::vector<std::string> &argv, const WorkerEnvironment &env,
                 const std::function<bool(pid_t)> &gate, std::string &error, bool awaitExec = true);

} // namespace msc::exec
