// "A GPU becomes a slice": the one rule of how a plan's GPU slice is bound to a device, which SMs
// it holds and which mechanism makes it. Lowering binds a placed role with it, the supervisor binds
// a slice moved off a lost GPU and a slice it resizes; so a slice moved onto a GPU of another
// architecture gets that GPU's SM partitioning and mechanism, not the lost one's.
#pragma once

#include "hal/Topology.h"
#include "plan/plan.pb.h"

namespace msc::admission {

// The mechanism that makes `slices` of a GPU divided into `division`: MIG where the GPU runs MIG,
// the whole GPU for one undivided slice, else green contexts where the driver has them (compute
// capability 6.0 on, unless the topology says otherwise), else MPS.
plan::GpuSlice::Mechanism sliceMechanism(const hal::GpuInfo &gpu, unsigned slices, unsigned division);

// Sets the slice's SMs and mechanism from its shape (slices, slices_per_gpu), its GPU's SM count
// (gpu_sm_count) and `gpu`'s architecture; without `gpu` (its facts unknown) the SMs are split
// without a partition alignment and the mechanism stays as it is.
void shapeSlice(plan::GpuSlice &slice, const hal::GpuInfo *gpu);

// Binds `slice` (its role, slices and slices_per_gpu set) to `gpu` of `node`: index, PCI address,
// model, SM count, NUMA node (no UUID: it named another device), then shapeSlice.
void bindSliceToGpu(plan::GpuSlice &slice, const hal::Topology &node, const hal::GpuRef &gpu);

} // namespace msc::admission
