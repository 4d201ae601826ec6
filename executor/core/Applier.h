// One kind of node resource a plan asks for (CPU, IO, memory, GPU, RDMA). Appliers are applied
// in order and rolled back in reverse: a failure part-way leaves the node as it was. The interface
// every applier implements, the GPU's and the RDMA's below the executor as much as the host's.
#pragma once

#include "plan/plan.pb.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

class Logger;

// Where an applier writes its log lines (the session's Logger, which adds the contract and the
// applier's name); empty: nowhere.
using LogSink = std::function<void(const std::string &)>;

// What the worker process inherits: environment variables and file descriptors (hugepage pools,
// the io_uring reader's socket, ...). Filled by appliers before the worker starts.
struct WorkerEnvironment {
  std::map<std::string, std::string> variables;
  std::vector<int> inheritedFds;
  int stdioFd = -1; // when set, the worker's stdout and stderr (WorkerOutput.h); else the executor's
};

// Test hook: makes the applier named `failIn` fail at its apply step (roll-back tests).
struct FailureInjection {
  std::string failIn;
};

struct ApplyContext {
  const plan::Plan &plan;
  std::string contractId;      // plan.provenance().contract() unless the agent renames it
  Logger &log;
  DiagnosticEngine &diags;
  WorkerEnvironment &worker;
  const FailureInjection *inject = nullptr;
  bool injected(llvm::StringRef applier) const { return inject && inject->failIn == applier; }
};

// What appliers made that the rest of the executor acts on, typed, so that nothing has to read it
// back out of the worker's environment. Each applier fills its part (state()).
struct AppliedState {
  std::string cgroup2Dir; // cpu: the contract's cgroup2 directory (PSI, cgroup.kill, tracing)
  std::string gpuSlices;  // gpu: the slices as the worker is told of them (MSCALE_GPU_SLICES syntax)
};

class Applier {
public:
  virtual ~Applier() = default;
  virtual llvm::StringRef name() const = 0; // "cpu", "io", "memory", "gpu", "rdma"
  // Applies this applier's part of the plan. On failure it reports a coded diagnostic, undoes
  // its own partial work, and returns false.
  virtual bool apply(ApplyContext &ctx) = 0;
  // Binds a started worker (cgroup membership, affinity). Called after every apply succeeded.
  virtual bool attach(ApplyContext &ctx, pid_t worker) { return true; }
  // Undoes apply (and attach). Safe to call once after a successful apply.
  virtual void rollback(ApplyContext &ctx) = 0;
  // What is applied now, one line per thing ("cgroup v1 cpuset /sys/fs/cgroup/cpuset/mscale/t1: cpus 0"),
  // for `mscale-cli contract status` and the log. Empty before apply and after rollback.
  virtual std::vector<std::string> describe() const { return {}; }
  // Its part of what is applied now (nothing before apply and after rollback).
  virtual void state(AppliedState &out) const {}
};

} // namespace msc::exec
