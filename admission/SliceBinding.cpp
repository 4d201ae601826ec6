#include "admission/SliceBinding.h"

#include "admission/GpuArch.h"

#include <algorithm>

namespace msc::admission {

plan::GpuSlice::Mechanism sliceMechanism(const hal::GpuInfo &gpu, unsigned slices, unsigned division) {
  if (gpu.mig == hal::MigMode::Enabled)
    return plan::GpuSlice::MIG;
  if (division <= 1 && slices <= 1)
    return plan::GpuSlice::WHOLE_GPU;
  bool green = gpu.greenContexts ? *gpu.greenContexts : (gpu.ccMajor < 0 || gpu.ccMajor >= 6);
  return green ? plan::GpuSlice::GREEN_CONTEXT : plan::GpuSlice::MPS;
}

void shapeSlice(plan::GpuSlice &slice, const hal::GpuInfo *gpu) {
  unsigned slices = std::max(1u, slice.slices());
  unsigned division = std::max(slices, slice.slices_per_gpu());
  SmPartitioning part = gpu ? smPartitioning(gpu->ccMajor, gpu->ccMinor) : SmPartitioning{};
  slice.set_sm_count(slice.gpu_sm_count() ? smsForSlices(slice.gpu_sm_count(), division, slices, part) : 0);
  if (gpu)
    slice.set_mechanism(sliceMechanism(*gpu, slices, division));
}

void bindSliceToGpu(plan::GpuSlice &slice, const hal::Topology &node, const hal::GpuRef &gpu) {
  slice.set_gpu_index(gpu.index);
  slice.set_pci_address(gpu.info->pci.str());
  slice.set_model(gpu.info->model);
  slice.set_gpu_sm_count(gpu.info->smCount);
  slice.clear_uuid();
  std::optional<unsigned> numa = node.numaNodeOfDevice(gpu.vertex);
  slice.set_numa_node(numa ? int32_t(*numa) : -1);
  shapeSlice(slice, gpu.info);
}

} // namespace msc::admission
