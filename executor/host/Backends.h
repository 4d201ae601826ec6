// Each host backend's factories, for createCpuHost and its siblings (HostAppliers.cpp) to pick from.
#pragma once

#include "executor/host/HostBackend.h"

namespace msc::exec {

std::unique_ptr<CpuHost> createRealCpuHost(const ApplierOptions &options);
std::unique_ptr<IoHost> createRealIoHost(const ApplierOptions &options);
std::unique_ptr<MemoryHost> createRealMemoryHost(const ApplierOptions &options);

std::unique_ptr<CpuHost> createSimCpuHost();
std::unique_ptr<IoHost> createSimIoHost();
std::unique_ptr<MemoryHost> createSimMemoryHost();

} // namespace msc::exec
