// GPU slices behind one interface with two implementations: `cuda` (the driver API through
// dlopen, green contexts, MPS fallback) and `sim` (a model of GPUs from the topology, for
// machines without GPUs, driven by tests and fault injection). The backend in use is always
// named in logs and status; sim never pretends to be cuda.
#pragma once

#include "plan/plan.pb.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

using SliceId = uint64_t;

struct SliceSample {
  double tflops = 0;            // achieved over the last window
  uint64_t memoryBytes = 0;     // slice memory in use
  double utilisation = 0;       // 0..1
  int64_t temperatureMilliC = 0;
  unsigned sms = 0;
};

class GpuBackend {
public:
  virtual ~GpuBackend();
  virtual llvm::StringRef name() const = 0; // "cuda" or "sim"
  // Creates the slice a plan entry asks for; on failure returns nullopt and sets `error`.
  virtual std::optional<SliceId> createSlice(const plan::GpuSlice &slice, std::string &error) = 0;
  // Changes a slice's SM count in place when possible (resize hand-over creates a new one first).
  virtual bool resizeSlice(SliceId id, unsigned sms, std::string &error) = 0;
  virtual void destroySlice(SliceId id) = 0;
  // A cheap query (device attribute read); false means the GPU did not answer.
  virtual bool heartbeat(SliceId id) = 0;
  virtual std::optional<SliceSample> sample(SliceId id) = 0;
  // Environment the worker needs to use the slice (e.g. CUDA_VISIBLE_DEVICES, MPS limits).
  virtual std::vector<std::pair<std::string, std::string>> workerEnvironment(SliceId id) = 0;
};

} // namespace msc::exec
