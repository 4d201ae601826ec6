// The host's appliers, one per resource, each over its backend (HostBackend.h: real or sim):
//   cpu     the contract's cgroups and cpuset, the worker's affinity;
//           MSCALE_CONTRACT, MSCALE_CPUS, MSCALE_ROLES, MSCALE_ROLE_<ROLE>_CPUS, and MSCALE_CGROUP
//           where the backend made the contract's cgroup2 directory (a worker's script finds its PSI there)
//   io      io weight and limits, the NVMe scheduler, the io_uring depth;  MSCALE_ROLE_<ROLE>_IO_DEPTH
//   memory  hugepage reservation and one memfd per pool, inherited by the worker;
//           MSCALE_POOL_<ROLE>_FD, _BYTES, _PAGE_SIZE
// (worker/WorkerApi.h reads them.) Applied in this order, rolled back in reverse. The executor itself
// learns the cgroup2 directory from AppliedState::cgroup2Dir, not from the worker's environment.
#pragma once

#include "executor/host/HostBackend.h"

#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

std::unique_ptr<Applier> createCpuApplier(std::unique_ptr<CpuHost> host);
std::unique_ptr<Applier> createIoApplier(std::unique_ptr<IoHost> host);
std::unique_ptr<Applier> createMemoryApplier(std::unique_ptr<MemoryHost> host);

// cpu, io and memory over `backend`, in the order they apply.
std::vector<std::unique_ptr<Applier>> createHostAppliers(HostBackend backend, const ApplierOptions &options);

// What the host appliers act on, for the log: the cgroup layout, or that the sim backend acts on nothing.
std::string describeHostBackend(HostBackend backend, const CgroupLayout &cgroups);

// The name the pool's memfd carries (/proc/PID/fd shows it): "mscale-pool-<contract>-<role>".
std::string poolName(const std::string &contract, const std::string &role);

} // namespace msc::exec
