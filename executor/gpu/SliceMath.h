// The arithmetic both GPU backends share, so that sim and cuda slice a GPU the same way.
#pragma once

#include "plan/plan.pb.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace msc::exec {

// The unit a slice is made of: a green-context partition must be at least minSmPartitionSize SMs
// and a multiple of smCoscheduledAlignment; a granule of max(min, alignment) rounded up to the
// alignment satisfies both.
inline unsigned smGranule(unsigned minPartition, unsigned alignment) {
  unsigned align = std::max(1u, alignment);
  unsigned g = std::max(minPartition, align);
  return (g + align - 1) / align * align;
}

// SMs a plan entry asks for: sm_count when the compiler knew it, else the profile's share of the
// GPU (slices / slices_per_gpu), else the whole GPU.
inline unsigned requestedSms(const plan::GpuSlice &slice, unsigned gpuSms) {
  if (slice.sm_count())
    return slice.sm_count();
  if (slice.slices_per_gpu() && gpuSms)
    return gpuSms / slice.slices_per_gpu() * std::max(1u, slice.slices());
  return gpuSms;
}

// Whole granules, rounded down (a slice never takes SMs its neighbours were promised), at least one.
inline unsigned granulesFor(unsigned sms, unsigned granule) {
  return std::max(1u, sms / std::max(1u, granule));
}

// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for a share of the GPU, rounded up, 1..100.
inline unsigned mpsPercentage(unsigned sms, unsigned gpuSms) {
  if (!gpuSms)
    return 100;
  unsigned p = static_cast<unsigned>((uint64_t(sms) * 100 + gpuSms - 1) / gpuSms);
  return std::clamp(p, 1u, 100u);
}

// The device a worker is pointed at: the UUID when the plan has one (robust to renumbering),
// else the index in PCI bus order (the executor also sets CUDA_DEVICE_ORDER=PCI_BUS_ID).
inline std::string visibleDevice(const plan::GpuSlice &slice) {
  if (!slice.uuid().empty())
    return slice.uuid().rfind("GPU-", 0) == 0 ? slice.uuid() : "GPU-" + slice.uuid();
  return std::to_string(slice.gpu_index());
}

} // namespace msc::exec
