// Which backend each host applier acts through.
#include "executor/host/HostAppliers.h"

#include "executor/host/Backends.h"

namespace msc::exec {

std::unique_ptr<CpuHost> createCpuHost(HostBackend backend, const ApplierOptions &options) {
  return backend == HostBackend::Sim ? createSimCpuHost() : createRealCpuHost(options);
}
std::unique_ptr<IoHost> createIoHost(HostBackend backend, const ApplierOptions &options) {
  return backend == HostBackend::Sim ? createSimIoHost() : createRealIoHost(options);
}
std::unique_ptr<MemoryHost> createMemoryHost(HostBackend backend, const ApplierOptions &options) {
  return backend == HostBackend::Sim ? createSimMemoryHost() : createRealMemoryHost(options);
}

std::vector<std::unique_ptr<Applier>> createHostAppliers(HostBackend backend, const ApplierOptions &options) {
  std::vector<std::unique_ptr<Applier>> out;
  out.push_back(createCpuApplier(createCpuHost(backend, options)));
  out.push_back(createIoApplier(createIoHost(backend, options)));
  out.push_back(createMemoryApplier(createMemoryHost(backend, options)));
  return out;
}

std::string describeHostBackend(HostBackend backend, const CgroupLayout &cgroups) {
  return backend == HostBackend::Sim ? "host_backend sim: no cgroup, affinity, sysfs setting or hugepage is applied"
                                     : cgroups.describe();
}

} // namespace msc::exec
