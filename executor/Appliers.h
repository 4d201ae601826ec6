// Factories of the node-resource appliers this folder implements (one file each): CPU (cgroup
// cpuset + affinity + role CPU variables), IO (cgroup io weight/limits, io_uring depth check, NVMe
// scheduler) and memory (hugepage reservation + memfd pool). GPU and RDMA appliers live in
// executor/gpu and executor/rdma. Applied in the order of createAppliers, rolled back in reverse.
// The node config's host_backend picks between these and their sim counterparts (SimHostAppliers.cpp).
#pragma once

#include "executor/core/Applier.h"
#include "executor/Cgroups.h"
#include "executor/NodeConfig.h"

#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

struct ApplierOptions {
  CgroupLayout cgroups;
  std::string nvmeScheduler;          // node config nvme_scheduler ("" leaves schedulers alone)
  bool hugepageAutoAllocate = true;   // honour plans' reserve_pages
};

std::unique_ptr<Applier> createCpuApplier(const ApplierOptions &options);
std::unique_ptr<Applier> createIoApplier(const ApplierOptions &options);
std::unique_ptr<Applier> createMemoryApplier(const ApplierOptions &options);

// host_backend: sim, for a recorded node served on a machine that lacks its CPUs and hugepages:
// the worker gets the same variables as from the appliers above, with the plan's CPUs, and an
// ordinary (not hugetlb) memfd of each pool's size; no cgroup, affinity, sysfs file or hugepage
// pool is touched, and MSCALE_CGROUP is not set.
std::unique_ptr<Applier> createSimCpuApplier();
std::unique_ptr<Applier> createSimIoApplier();
std::unique_ptr<Applier> createSimMemoryApplier();

// What the host appliers act on, for the log: the cgroup layout, or that the sim backend acts on nothing.
inline std::string describeHostBackend(HostBackend backend, const CgroupLayout &cgroups) {
  return backend == HostBackend::Sim ? "host_backend sim: no cgroup, affinity, sysfs setting or hugepage is applied"
                                     : cgroups.describe();
}

// Environment variables the appliers set for the worker (see worker/WorkerApi.h, WorkerVariables.h):
//   MSCALE_CONTRACT, MSCALE_CGROUP (real host backend only), MSCALE_CPUS, MSCALE_ROLES (comma list)
//   MSCALE_ROLE_<ROLE>_CPUS, MSCALE_ROLE_<ROLE>_IO_DEPTH
//   MSCALE_POOL_<ROLE>_FD, MSCALE_POOL_<ROLE>_BYTES, MSCALE_POOL_<ROLE>_PAGE_SIZE
inline constexpr const char *kEnvPrefix = "MSCALE_";

} // namespace msc::exec
