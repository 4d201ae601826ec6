// Internal to hal/: the pieces the live loader combines. Not for other libraries.
#pragma once

#include "hal/Topology.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace msc::hal::detail {

// Reads a small text file under a root ("/" or a recorded tree); nullopt if absent.
std::optional<std::string> readFileAt(llvm::StringRef root, llvm::StringRef path);
std::string joinRoot(llvm::StringRef root, llvm::StringRef path);
// An RDMA port's state file ("4: ACTIVE") as the topology keeps it ("ACTIVE").
std::string rdmaPortState(llvm::StringRef stateFileText);

// sysfs/procfs facts hwloc does not give: kernel command line, per-node hugepages (total and
// free), NVMe partitions and queue limits, RDMA ports and counters, thermal zones and hwmon,
// PCI functions in 32-bit domains, GPU model names from /proc/driver/nvidia.
void addSysfsFacts(Topology &t, llvm::StringRef root, DiagnosticEngine &diags);

// CUDA driver (dlopen libcuda.so.1) and NVML (dlopen libnvidia-ml.so.1), live machine only.
// Returns a note for `Topology::notes()` ("CUDA driver: ...").
void addCudaFacts(Topology &t);
// libibverbs: the RDMA devices and their ports, live machine only.
void addVerbsFacts(Topology &t);

// A GPU vertex for a PCI function (created when missing).
VertexId ensureGpu(Topology &t, VertexId pciFunction);
// NVLink bandwidth (MB/s, as hwloc reports it) to a link count.
unsigned nvlinksFromBandwidth(uint64_t mbps);
bool isGpuPci(uint16_t vendor, uint32_t classId);

} // namespace msc::hal::detail
