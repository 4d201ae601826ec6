// Shared lookups of contract values in a topology, used by several passes and by placement.
#pragma once

#include "hal/Topology.h"
#include "ir/IR.h"
#include "passes/Placement.h"

#include <optional>
#include <string>

namespace msc::passes {

std::optional<hal::GpuRef> resolveGpu(const hal::Topology &topo, const ir::GpuRef &ref);
GpuPlacement gpuPlacement(const hal::Topology &topo, const hal::GpuRef &gpu);
// "/dev/nvme0n1p1" -> "nvme0n1p1"
std::string blockDeviceName(llvm::StringRef path);
// SMs held by `slices` of `division` on this GPU (the architecture's alignment applied).
unsigned smsForSlices(const hal::Topology &topo, const GpuPlacement &gpu, unsigned division, unsigned slices);
// Resolves every role of `contract` on `topo` (best effort, no diagnostics).
Placement place(const ir::Contract &contract, const hal::Topology *topo);
// "0000:[00-3f]": a host bridge as `nvidia-smi topo` users read it; "no root complex" for none.
std::string rootComplexName(const hal::Topology &topo, hal::VertexId bridge);
// An RDMA device with a port that is up, or whose port states the topology does not know.
bool hasUsablePort(const hal::Topology &topo, hal::VertexId rdma);
// The GPU a role without its own GPU feeds: the contract's only GPU, if it has exactly one.
const GpuPlacement *fedGpu(const Placement &placement, const RolePlacement &role);

} // namespace msc::passes
