// The `sim` GPU backend: a deterministic model of GPUs for machines without them. It never
// pretends to be cuda: name() is "sim" and the worker sees MSCALE_GPU_BACKEND=sim.
//
// Model, per GPU (all deterministic; time is counted in sample windows, not wall time):
//   - slices hold whole granules of `granule()` SMs (max(minSmPartition, smAlignment)); a request
//     is rounded down to granules, at least one, exactly as the cuda backend does;
//   - achieved TFLOP/s of a slice = sms * tflopsPerSm * utilisation * drift(window), where the
//     density drift schedule is a list of (window, factor) steps per GPU;
//   - temperature moves each window towards base + heatPerUtilisation * gpuUtilisation with
//     rate `thermalAlpha`, unless pinned by setTemperature();
//   - memory in use = memory_limit_bytes (the GPU's memory when the plan sets none) * memoryFraction;
//     it does not change when a slice is resized, so density follows the SMs.
// The window of a GPU only moves forward: a slice created after a resize continues the drift
// schedule where the old one stopped.
//
// Faults: injectFault(gpu, SimFault::Lost) makes heartbeat false, sample empty and createSlice fail;
// SimFault::CreateFails fails only new slices; SimFault::None clears.
//
// Control from another process: a text file (BackendOptions::simControlFile or $MSCALE_SIM_CONTROL),
// re-read whenever its size or mtime changes, one command per line ('#' comments):
//   gpu <index> fault none|lost|create-fails
//   gpu <index> temperature <milliC>|unpin
//   gpu <index> drift <window>:<factor> [<window>:<factor> ...]
//   gpu <index> utilisation <0..1>
//   rdma <device> <port> up|down          (read by the sim RDMA backend)
// Commands are idempotent settings; a line removed from the file changes nothing (write `none`).
#pragma once

#include "executor/gpu/GpuBackend.h"
#include "executor/SimControlFile.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace msc::hal {
class Topology;
}

namespace msc::exec {

struct SimGpuConfig {
  unsigned index = 0;
  std::string pciAddress; // "0000:17:00.0"; matched before the index when a plan names one
  std::string uuid;
  std::string model = "sim-gpu";
  unsigned smCount = 132;
  uint64_t memoryBytes = 80ull << 30;
  unsigned minSmPartition = 8;
  unsigned smAlignment = 8;
  bool greenContexts = true; // false: slices are MPS percentages, like the cuda fallback
  double tflopsPerSm = 7.5;  // dense BF16 of an H100 SXM is ~989 TFLOP/s over 132 SMs
  double utilisation = 0.9;  // default load of a slice
  double memoryFraction = 0.5;
  int64_t baseTemperatureMilliC = 40000;
  int64_t heatPerUtilisationMilliC = 40000; // full load settles at base + this
  double thermalAlpha = 0.25;
};

// Parses "2x132sm:80g" / "1x144sm:141g:nogreen" style specs ("<count>x<sms>sm[:<mem>g][:nogreen]",
// comma separated); false with `error` on a malformed spec.
bool parseSimGpuSpec(const std::string &spec, std::vector<SimGpuConfig> &out, std::string &error);
// One GPU per topology GPU: SMs and memory where known (defaults otherwise), temperature as read.
std::vector<SimGpuConfig> simGpusFromTopology(const hal::Topology &topology);

enum class SimFault { None, Lost, CreateFails };

struct DriftStep {
  uint64_t window = 0; // from this window on (0 = the first sample)
  double factor = 1.0;
};

class SimGpuBackend final : public GpuBackend {
public:
  explicit SimGpuBackend(std::vector<SimGpuConfig> gpus, std::string controlFile = {});
  ~SimGpuBackend() override;

  llvm::StringRef name() const override { return "sim"; }
  std::optional<SliceId> createSlice(const plan::GpuSlice &slice, std::string &error) override;
  bool resizeSlice(SliceId id, unsigned sms, std::string &error) override;
  void destroySlice(SliceId id) override;
  bool heartbeat(SliceId id) override;
  std::optional<SliceSample> sample(SliceId id) override;
  std::vector<std::pair<std::string, std::string>> workerEnvironment(SliceId id) override;

  // --- the test and recovery API --------------------------------------------------------------
  bool injectFault(unsigned gpu, SimFault fault);
  bool setDensityDrift(unsigned gpu, std::vector<DriftStep> schedule);
  bool setTemperature(unsigned gpu, int64_t milliC); // pins it until unpinTemperature()
  bool unpinTemperature(unsigned gpu);
  bool setUtilisation(unsigned gpu, double utilisation);
  // Applies one control-file line; false with `error` when it is not understood.
  bool applyControl(const std::string &line, std::string &error);

  // --- introspection --------------------------------------------------------------------------
  size_t gpuCount() const { return gpus_.size(); }
  unsigned granule(unsigned gpu) const;
  unsigned freeSms(unsigned gpu) const;
  size_t liveSlices() const;
  std::optional<unsigned> sliceSms(SliceId id) const;
  std::optional<unsigned> sliceGpu(SliceId id) const;
  int64_t temperature(unsigned gpu) const;
  uint64_t window(unsigned gpu) const;

private:
  struct Gpu;
  struct Slice;
  Gpu *findGpu(const plan::GpuSlice &slice);
  Gpu *gpuAt(unsigned index);
  const Gpu *gpuAt(unsigned index) const;
  void pollControlFile();
  void advanceWindow(Gpu &gpu);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
  std::map<SliceId, Slice> slices_;
  SliceId next_ = 1;
  SimControlFile control_;
};

} // namespace msc::exec
