// Choosing and building a GPU backend. `auto` takes `cuda` when a real driver answers (cuInit
// succeeds and at least one device is seen) and `sim` otherwise, and says why; an explicit
// `cuda` that cannot be had is an error (ERR_GPU_001), never a silent fall-back to sim.
#pragma once

#include "executor/core/BackendOptions.h"
#include "executor/gpu/GpuBackend.h"
#include "support/Diagnostic.h"

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

// Samples use this for a temperature nobody could read (no NVML).
inline constexpr int64_t kUnknownTemperature = INT64_MIN;

// What the probe of the CUDA driver found, without creating anything.
struct CudaProbe {
  bool available = false;
  std::string library;  // the path or soname that was tried
  std::string why;      // "no libcuda.so.1", "stub library (cuInit: CUDA_ERROR_STUB_LIBRARY)", ...
  int driverVersion = 0;
  int devices = 0;
  bool greenContexts = false;
};
CudaProbe probeCuda(const BackendOptions &options);

// The `cuda` backend, or null with `why` set when the driver is not usable.
std::unique_ptr<GpuBackend> createCudaBackend(const BackendOptions &options, std::string &why);
// The `sim` backend from options.simGpus, else options.topology's GPUs.
std::unique_ptr<GpuBackend> createSimGpuBackend(const BackendOptions &options);

// `why` always says which backend was chosen and the reason ("sim: no libcuda.so.1").
// Returns null (and sets `why`) only for an explicit backend that cannot be had or an unknown name;
// with `diags` the failure is also reported as ERR_GPU_001 / ERR_GPU_002.
std::unique_ptr<GpuBackend> selectGpuBackend(const BackendOptions &options, std::string &why,
                                             DiagnosticEngine *diags = nullptr);

} // namespace msc::exec
