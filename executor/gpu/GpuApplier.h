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

#include "executor/Applier.h"
#include "executor/GpuBackend.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

// Where appliers write their log lines until they get the agent's Logger.
using LogSink = std::function<void(const std::string &)>;

struct AppliedSlice {
  int planIndex = 0; // index in plan.gpu_slices()
  std::string role;
  unsigned gpuIndex = 0;
  SliceId id = 0;
};

std::unique_ptr<Applier> createGpuApplier(GpuBackend &backend, LogSink log = {});
// The slices a GPU applier holds after apply (null for any other applier): what the monitor samples.
const std::vector<AppliedSlice> *appliedGpuSlices(const Applier &applier);

} // namespace msc::exec
