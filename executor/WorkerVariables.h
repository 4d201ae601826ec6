// The variables the executor gives a worker beyond what the appliers set (host/HostAppliers.h lists
// theirs; worker/WorkerApi.h reads them):
//   MSCALE_SNAPSHOT_DIR, _EVERY, _KEEP                                   (the plan's fault tolerance)
//   MSCALE_PHASES                                                        (the plan's phases, in order)
//   LD_PRELOAD, MSCALE_CUDA_COUNTERS, MSCALE_CUDA_COUNTERS_MODE         (run --cuda-counters)
#pragma once

#include "executor/core/Applier.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::exec {

// What the plan tells its workers, for the supervisor's workers and for processes attached to a
// contract (the Slurm tasks of slurm/): MSCALE_SNAPSHOT_DIR/_EVERY/_KEEP from its fault tolerance
// (those it sets), and MSCALE_PHASES, its phases' names in plan order ("decode,compute"), by which
// a worker enters them (worker/WorkerApi.h enterPhase).
void setPlanVariables(const plan::Plan &plan, std::map<std::string, std::string> &variables);

// The worker environment without the variables that name a file descriptor (MSCALE_*_FD): what a
// process the executor did not start can use, since it does not inherit the executor's fds.
std::map<std::string, std::string> variablesWithoutFds(const WorkerEnvironment &worker);

// Preloads the CUDA interposer (interposer/) into the workers, counting their CUDA calls into
// `countersDir` for `mscale-trace --via interposer --counters-dir`: LD_PRELOAD (ahead of the
// executor's own, if any), the counters directory, and counting mode.
void setCudaCounterVariables(const std::string &interposerPath, const std::string &countersDir,
                             std::map<std::string, std::string> &variables);

} // namespace msc::exec
