// Backend selection: auto takes cuda when a real driver answers and sim otherwise, and says why.
#include "executor/gpu/GpuBackends.h"

#include "executor/gpu/SimGpuBackend.h"

#include <cstdlib>

namespace msc::exec {

GpuBackend::~GpuBackend() = default;

std::unique_ptr<GpuBackend> createSimGpuBackend(const BackendOptions &options) {
  std::vector<SimGpuConfig> gpus;
  if (options.simGpus)
    gpus = *options.simGpus;
  else if (options.topology)
    gpus = simGpusFromTopology(*options.topology);
  std::string control = options.simControlFile;
  if (control.empty())
    if (const char *v = std::getenv("MSCALE_SIM_CONTROL"))
      control = v;
  return std::make_unique<SimGpuBackend>(std::move(gpus), std::move(control));
}

std::unique_ptr<GpuBackend> selectGpuBackend(const BackendOptions &options, std::string &why,
                                             DiagnosticEngine *diags) {
  if (options.gpu == "sim") {
    why = "sim: asked for";
    return createSimGpuBackend(options);
  }
  if (options.gpu != "auto" && options.gpu != "cuda") {
    why = "unknown GPU backend '" + options.gpu + "'";
    if (diags)
      diags->report(DiagCode::ERR_GPU_002) << options.gpu;
    return nullptr;
  }
  std::string cudaWhy;
  if (auto cuda = createCudaBackend(options, cudaWhy)) {
    why = "cuda: " + cudaWhy;
    return cuda;
  }
  if (options.gpu == "cuda") {
    why = "cuda unavailable: " + cudaWhy;
    if (diags)
      diags->report(DiagCode::ERR_GPU_001) << cudaWhy;
    return nullptr;
  }
  why = "sim: " + cudaWhy;
  return createSimGpuBackend(options);
}

} // namespace msc::exec
