// What the host appliers (CpuApplier, IoApplier, MemoryApplier) do to the machine, behind one
// interface per resource, as the GPU applier works over a GpuBackend. The applier decides what the
// plan asks for, what the worker is told and what is logged, once; the backend only acts:
//   real  the node itself: cgroups (v2, else v1), affinity, sysfs, io_uring, hugetlb memfds;
//   sim   a recorded node served on a machine that lacks its CPUs, disks and hugepages (several
//         agents on one laptop, each serving a 48-core node): nothing of the host is changed, each
//         line it describes says so, and a pool is an ordinary sparse memfd of the pool's size.
// One backend object holds one contract's part and undoes it (release) in reverse. A method that
// fails reports a coded diagnostic in ctx.diags and returns false; the applier then calls release,
// which undoes whatever part was made and may be called more than once.
#pragma once

#include "executor/core/Applier.h"
#include "executor/host/Cgroups.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

// The node config's host_backend.
enum class HostBackend { Real, Sim };

// What the real backends need from the node config and the mounts.
struct ApplierOptions {
  CgroupLayout cgroups;
  std::string nvmeScheduler;          // node config nvme_scheduler ("" leaves schedulers alone)
  bool hugepageAutoAllocate = true;   // honour plans' reserve_pages
};

// The contract's CPUs: where the contract's processes may run, and the cgroup it is traced by.
struct CpuRequest {
  std::vector<unsigned> cpus, mems; // all the plan's roles together, sorted, unique; either may be empty
  unsigned weight = 0;              // the plan's cpu_weight (cgroup2 cpu.weight scale); 0: the kernel's
};

class CpuHost {
public:
  virtual ~CpuHost() = default;
  // Confines the contract to `request`; appends what it did to `lines`.
  virtual bool confine(ApplyContext &ctx, const CpuRequest &request, std::vector<std::string> &lines) = 0;
  // Moves a started worker into what confine made and pins it to the CPUs.
  virtual bool attach(ApplyContext &ctx, pid_t worker, const std::vector<unsigned> &cpus) = 0;
  virtual void release(ApplyContext &ctx) = 0;
  // The contract's cgroup2 directory once confined (empty when there is none: no cgroup2, sim).
  virtual std::string cgroup2Dir() const = 0;
};

class IoHost {
public:
  virtual ~IoHost() = default;
  // Whether io_uring takes a ring of the role's depth. False with ERR_EXEC_007; `note` qualifies the
  // depth's line (" (host_backend sim: not checked)").
  virtual bool checkRingDepth(ApplyContext &ctx, const plan::IoBinding &binding, std::string &note) = 0;
  // The role's scheduler, weight and bandwidth limit. What the node cannot do is a WRN_EXEC_002;
  // false only on an error.
  virtual bool applySettings(ApplyContext &ctx, const plan::IoBinding &binding, std::vector<std::string> &lines) = 0;
  virtual bool attach(ApplyContext &ctx, pid_t worker) = 0;
  virtual void release(ApplyContext &ctx) = 0;
};

// A pool made for the worker: the fd it inherits and the pages it maps it with.
struct MadePool {
  int fd = -1;
  uint64_t bytes = 0, pageSize = 0;
  std::string line; // what describe() says of it
};

class MemoryHost {
public:
  virtual ~MemoryHost() = default;
  // Reserves what the pool lacks when the plan says to (reserve_pages > 0). False with ERR_EXEC_005.
  virtual bool reserve(ApplyContext &ctx, const plan::MemoryPool &pool, std::vector<std::string> &lines) = 0;
  // Makes the pool's memory as a memfd named `name`. False with ERR_EXEC_006.
  virtual bool makePool(ApplyContext &ctx, const plan::MemoryPool &pool, const std::string &name, MadePool &out) = 0;
  // Gives back what reserve took (the pools' fds are the applier's to close).
  virtual void release(ApplyContext &ctx) = 0;
};

std::unique_ptr<CpuHost> createCpuHost(HostBackend backend, const ApplierOptions &options);
std::unique_ptr<IoHost> createIoHost(HostBackend backend, const ApplierOptions &options);
std::unique_ptr<MemoryHost> createMemoryHost(HostBackend backend, const ApplierOptions &options);

} // namespace msc::exec
