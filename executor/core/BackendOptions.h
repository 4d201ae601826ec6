// Which device backends a node uses, and what the `sim` ones model: one set of options for the GPU
// and the RDMA side (executor/gpu, executor/rdma), so that neither depends on the other for it.
#pragma once

#include <string>
#include <vector>

namespace msc::hal {
class Topology;
}

namespace msc::exec {

struct SimGpuConfig; // executor/gpu/SimGpuBackend.h

struct BackendOptions {
  std::string gpu = "auto";  // "auto" | "cuda" | "sim"
  std::string rdma = "auto"; // "auto" | "ibverbs" | "sim"
  // The driver library to dlopen; empty: $MSCALE_CUDA_LIBRARY, else "libcuda.so.1".
  std::string cudaLibrary;
  // NVML for temperatures and utilisation; empty: $MSCALE_NVML_LIBRARY, else "libnvidia-ml.so.1".
  std::string nvmlLibrary;
  // What the sim backends model: explicit GPUs win over the topology's; with neither, sim GPU
  // has no GPUs and sim RDMA accepts any device and port (all up).
  const hal::Topology *topology = nullptr;
  std::vector<SimGpuConfig> *simGpus = nullptr;
  // A file other processes write to drive the sim backends (see SimGpuBackend.h); empty:
  // $MSCALE_SIM_CONTROL, else none.
  std::string simControlFile;
};

} // namespace msc::exec
