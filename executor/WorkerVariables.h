// The environment the host appliers hand the worker (worker/WorkerApi.h reads it), computed in one
// place so that the real appliers and the sim ones (SimHostAppliers.cpp) cannot drift apart:
//   MSCALE_CONTRACT, MSCALE_CPUS, MSCALE_ROLES, MSCALE_ROLE_<ROLE>_CPUS     (cpu)
//   MSCALE_ROLE_<ROLE>_IO_DEPTH                                          (io)
//   MSCALE_POOL_<ROLE>_FD, _BYTES, _PAGE_SIZE and the inherited fd       (memory)
//   LD_PRELOAD, MSCALE_CUDA_COUNTERS, MSCALE_CUDA_COUNTERS_MODE         (run --cuda-counters)
//   MSCALE_SNAPSHOT_DIR, _EVERY, _KEEP                                   (the plan's fault tolerance)
// MSCALE_CGROUP is not here: only an applier that made the contract's cgroup2 directory sets it.
#pragma once

#include "executor/core/Applier.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::exec {

// The CPUs and NUMA nodes of all the plan's roles together, sorted and unique.
struct PlanCpus {
  std::vector<unsigned> cpus, mems;
};

// Sets the cpu variables of `plan` and returns what the contract's cpuset is made of.
PlanCpus setCpuVariables(const plan::Plan &plan, const std::string &contract, WorkerEnvironment &worker);
// "role data: CPUs 0-3", one line per role that has CPUs (describe() lines of the cpu appliers).
std::vector<std::string> describeRoleCpus(const plan::Plan &plan);

// Sets MSCALE_ROLE_<ROLE>_IO_DEPTH when the role has an io_uring depth; returns its describe()
// line ("role data: io_uring depth 16"), or "" when the role has none.
std::string setIoDepthVariable(const plan::IoBinding &binding, WorkerEnvironment &worker);

// MSCALE_SNAPSHOT_DIR/_EVERY/_KEEP from the plan's fault tolerance (those it sets), for the
// supervisor's workers and for processes attached to a contract (the Slurm tasks of slurm/).
void setSnapshotVariables(const plan::FaultTolerance &ft, std::map<std::string, std::string> &variables);

// The worker environment without the variables that name a file descriptor (MSCALE_*_FD): what a
// process the executor did not start can use, since it does not inherit the executor's fds.
std::map<std::string, std::string> variablesWithoutFds(const WorkerEnvironment &worker);

// The name the pool's memfd carries (/proc/PID/fd shows it): "mscale-pool-<contract>-<role>".
std::string poolName(const std::string &contract, const std::string &role);
// Hands pool `fd` of `bytes` to the worker: the three pool variables and the fd it inherits.
void handPoolToWorker(const std::string &role, int fd, uint64_t bytes, uint64_t pageSize, WorkerEnvironment &worker);
// Closes a pool handed over with handPoolToWorker and takes its fd back from the worker's list.
void closePool(int fd, WorkerEnvironment &worker);

// Preloads the CUDA interposer (interposer/) into the workers, counting their CUDA calls into
// `countersDir` for `mscale-trace --via interposer --counters-dir`: LD_PRELOAD (ahead of the
// executor's own, if any), the counters directory, and counting mode.
void setCudaCounterVariables(const std::string &interposerPath, const std::string &countersDir,
                             std::map<std::string, std::string> &variables);

} // namespace msc::exec
