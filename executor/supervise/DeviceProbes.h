// The devices' heartbeats, kubelet's liveness prober for hardware: once per heartbeat every GPU
// slice and RDMA queue-pair group the contract holds is asked whether it still answers, and one that
// misses `misses` heartbeats in a row is lost. The supervisor asks the backends; this room only
// counts and decides, so its rule runs in virtual time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace msc::exec {

enum class ProbedKind { GpuSlice, RdmaQpGroup };

struct ProbedDevice {
  ProbedKind kind = ProbedKind::GpuSlice;
  uint64_t id = 0; // the backend's slice id or queue-pair group id
  bool operator<(const ProbedDevice &o) const { return std::tie(kind, id) < std::tie(o.kind, o.id); }
  bool operator==(const ProbedDevice &o) const { return kind == o.kind && id == o.id; }
};

struct DeviceLoss {
  ProbedDevice device;
  uint32_t missed = 0;     // heartbeats in a row
  uint64_t lastGoodNs = 0; // when it last answered; 0 when it never did
};

class DeviceProbes {
public:
  explicit DeviceProbes(uint32_t misses) : misses_(misses ? misses : 1) {}

  // One heartbeat at `now`: asks the devices in their order. The first one that has now missed
  // `misses` heartbeats in a row is lost: it is returned, its count starts again, and the devices
  // after it are not asked this heartbeat (the job stops; one fault at a time).
  std::optional<DeviceLoss> probe(const std::vector<ProbedDevice> &devices,
                                  const std::function<bool(const ProbedDevice &)> &answers, uint64_t now);
  uint32_t missed(const ProbedDevice &device) const;

private:
  struct Record {
    uint32_t missed = 0;
    uint64_t lastGoodNs = 0;
  };
  uint32_t misses_;
  std::map<ProbedDevice, Record> records_;
};

} // namespace msc::exec
