// The GPU applier: creates every slice of plan.gpu_slices() through a GpuBackend, all or nothing,
// and tells the worker where its slices are.
//
// Worker environment it sets:
//   CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA_VISIBLE_DEVICES=<uuid or index, in plan order, unique>
//   MSCALE_GPU_BACKEND=cuda|sim
//   MSCALE_GPU_SLICES=<role>@<visible ordinal>:<sms>:<memory limit bytes>:<stream priority>;...
//   MSCALE_GPU_SLICE_IDS=<backend slice id>,...
//   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for MPS slices
#pragma once

#include "executor/core/Applier.h"
#include "executor/gpu/GpuBackend.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

struct AppliedSlice {
  int planIndex = 0; // index in plan.gpu_slices()
  std::string role;
  unsigned gpuIndex = 0;
  SliceId id = 0;
};

std::unique_ptr<Applier> createGpuApplier(GpuBackend &backend, LogSink log = {});
// The slices a GPU applier holds after apply (null for any other applier): what the monitor samples.
const std::vector<AppliedSlice> *appliedGpuSlices(const Applier &applier);
// Hand-over to the slices of ctx.plan (a resize, or a move off a lost GPU): every changed entry's new
// slice is created before anything is swapped; all or nothing. The replaced slices stay alive and
// are returned in `retiring`: release them with retireGpuSlices once the worker has moved.
bool replaceGpuSlices(Applier &gpuApplier, ApplyContext &ctx, std::vector<SliceId> &retiring,
                      std::vector<std::string> &changes, std::string &error);
void retireGpuSlices(Applier &gpuApplier, const std::vector<SliceId> &ids);

} // namespace msc::exec
