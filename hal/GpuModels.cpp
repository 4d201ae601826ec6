#include "hal/GpuModels.h"

namespace msc::hal {

namespace {
constexpr uint64_t GiB = 1ull << 30;
struct Entry {
  uint16_t deviceId;
  GpuModelFacts facts;
};
// From NVIDIA's product specifications (SM counts, memory, compute capability).
constexpr Entry kNvidia[] = {
    {0x06d2, {"Tesla M2070", 14, 6 * GiB, 2, 0}},
    {0x1094, {"Tesla M2075", 14, 6 * GiB, 2, 0}},
    {0x11ba, {"Quadro K6000", 15, 12 * GiB, 3, 5}},
    {0x15f9, {"Tesla P100-SXM2-16GB", 56, 16 * GiB, 6, 0}},
    {0x1db1, {"Tesla V100-SXM2-16GB", 80, 16 * GiB, 7, 0}},
    {0x1db4, {"Tesla V100-PCIE-16GB", 80, 16 * GiB, 7, 0}},
    {0x1db5, {"Tesla V100-SXM2-32GB", 80, 32 * GiB, 7, 0}},
    {0x1db8, {"Tesla V100-SXM3-32GB-H", 80, 32 * GiB, 7, 0}},
    {0x1eb8, {"Tesla T4", 40, 16 * GiB, 7, 5}},
    {0x20b0, {"A100-SXM4-40GB", 108, 40 * GiB, 8, 0}},
    {0x20b2, {"A100-SXM4-80GB", 108, 80 * GiB, 8, 0}},
    {0x20b5, {"A100 80GB PCIe", 108, 80 * GiB, 8, 0}},
    {0x20f1, {"A100-PCIE-40GB", 108, 40 * GiB, 8, 0}},
    {0x26b5, {"L40", 142, 48 * GiB, 8, 9}},
    {0x2330, {"H100 SXM5 80GB", 132, 80 * GiB, 9, 0}},
    {0x2331, {"H100 PCIe", 114, 80 * GiB, 9, 0}},
    {0x2335, {"H200", 132, 141 * GiB, 9, 0}},
};
} // namespace

std::optional<GpuModelFacts> nvidiaGpuByDeviceId(uint16_t deviceId) {
  for (const Entry &e : kNvidia)
    if (e.deviceId == deviceId)
      return e.facts;
  return std::nullopt;
}

} // namespace msc::hal
