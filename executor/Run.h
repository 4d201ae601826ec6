// `mscale-exec run plan.msp -- CMD ARGS`: read the plan, load the live topology, re-check, apply
// every applier (all-or-nothing), start the worker gated (cgroups and affinity before its first
// instruction), supervise it (executor/Supervisor: heartbeats, fault recovery when the plan has a
// recovery point, resizes), forward SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, release everything when it
// ends, and return its exit status (128 + signal when it was killed; 1 when the plan was refused or
// recovery was impossible). With --nproc-per-node N the worker is N ranks of one job, each in the
// plan's resources, supervised as one (executor/WorkerGroup); the status is the failing rank's.
#pragma once

#include "executor/core/Logger.h"
#include "executor/NodeConfig.h"

#include <string>
#include <vector>

namespace msc::exec {

struct RunOptions {
  std::string planPath;
  std::vector<std::string> command;
  std::string topology = "live";   // tests may re-check against a file; appliers still act on this node
  std::string configPath;
  std::string injectFailure;       // "cpu", "io", "memory", "gpu", "rdma"
  bool strictFingerprint = false;
  bool dryRun = false;             // re-check only
  unsigned maxRestarts = 10;       // worker restarts after faults before giving up
  unsigned crashLoopAfter = 3;     // failures in a row at one step that are a crash loop (0: never)
  bool resume = false;             // a previous executor of this job was lost: resume from disk
  unsigned nprocPerNode = 0;       // ranks of the job (1..kMaxRanksPerNode); 0: one worker, no rank environment
  // Non-empty: workers run with the CUDA interposer preloaded and count their calls into this
  // directory (mscale-trace --via interposer --counters-dir reads it).
  std::string cudaCountersDir;
  std::string cudaInterposerPath;  // libmscale_cuda_interposer.so
};

int runPlan(const RunOptions &options, Logger &log);

} // namespace msc::exec
