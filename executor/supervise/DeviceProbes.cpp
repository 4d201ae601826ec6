#include "executor/supervise/DeviceProbes.h"

namespace msc::exec {

std::optional<DeviceLoss> DeviceProbes::probe(const std::vector<ProbedDevice> &devices,
                                              const std::function<bool(const ProbedDevice &)> &answers,
                                              uint64_t now) {
  for (const ProbedDevice &d : devices) {
    Record &r = records_[d];
    if (answers(d)) {
      r.missed = 0;
      r.lastGoodNs = now;
      continue;
    }
    if (++r.missed < misses_)
      continue;
    DeviceLoss loss{d, r.missed, r.lastGoodNs};
    r.missed = 0;
    return loss;
  }
  return std::nullopt;
}

uint32_t DeviceProbes::missed(const ProbedDevice &device) const {
  auto it = records_.find(device);
  return it == records_.end() ? 0 : it->second.missed;
}

} // namespace msc::exec
