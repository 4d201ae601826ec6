// Factories of the node-resource appliers this folder implements (one file each): CPU (cgroup
// cpuset + affinity + role CPU variables), IO (cgroup io weight/limits, io_uring depth check, NVMe
// scheduler) and memory (hugepage reservation + memfd pool). GPU and RDMA appliers live in
// executor/gpu and executor/rdma. Applied in the order of createAppliers, rolled back in reverse.
#pragma once

#include "executor/Applier.h"
#include "executor/Cgroups.h"
#include "executor/NodeConfig.h"

#include <memory>
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

// Environment variables the appliers set for the worker (see worker/WorkerApi.h):
//   MSCALE_CONTRACT, MSCALE_CGROUP, MSCALE_CPUS, MSCALE_ROLES (comma list)
//   MSCALE_ROLE_<ROLE>_CPUS, MSCALE_ROLE_<ROLE>_IO_DEPTH
//   MSCALE_POOL_<ROLE>_FD, MSCALE_POOL_<ROLE>_BYTES, MSCALE_POOL_<ROLE>_PAGE_SIZE
inline constexpr const char *kEnvPrefix = "MSCALE_";

} // namespace msc::exec
