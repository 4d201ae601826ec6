// Published facts of NVIDIA data-centre GPUs by PCI device ID, for topology sources that see a
// GPU only as a PCI function (hwloc XML without CUDA/NVML, sysfs without a driver). The driver's
// own answers (GpuProbe.cpp) always win over this table.
#pragma once

#include <cstdint>
#include <optional>

namespace msc::hal {

struct GpuModelFacts {
  const char *name;
  unsigned smCount;
  uint64_t memoryBytes;
  int ccMajor, ccMinor;
};

std::optional<GpuModelFacts> nvidiaGpuByDeviceId(uint16_t deviceId);

} // namespace msc::hal
