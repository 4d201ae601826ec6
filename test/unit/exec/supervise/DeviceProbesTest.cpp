// The devices' heartbeats in virtual time: a device is lost at exactly `misses` missed heartbeats in
// a row, an answer starts the count again, and a GPU slice and an RDMA group of the same id are two
// devices.
#include "executor/supervise/DeviceProbes.h"

#include <gtest/gtest.h>

#include <set>

using namespace msc::exec;

namespace {

constexpr uint64_t kHeartbeat = 200'000'000;

struct Devices {
  std::set<ProbedDevice> down;
  std::vector<ProbedDevice> asked;
  std::function<bool(const ProbedDevice &)> answers() {
    return [this](const ProbedDevice &d) {
      asked.push_back(d);
      return !down.count(d);
    };
  }
};

} // namespace

TEST(DeviceProbes, LostAtExactlyTheMissedHeartbeatsInARow) {
  DeviceProbes probes(3);
  ProbedDevice slice{ProbedKind::GpuSlice, 1};
  Devices devices;
  uint64_t now = 0;
  EXPECT_FALSE(probes.probe({slice}, devices.answers(), now += kHeartbeat)); // answered at 200 ms
  devices.down.insert(slice);
  EXPECT_FALSE(probes.probe({slice}, devices.answers(), now += kHeartbeat));
  EXPECT_FALSE(probes.probe({slice}, devices.answers(), now += kHeartbeat));
  EXPECT_EQ(probes.missed(slice), 2u);
  std::optional<DeviceLoss> loss = probes.probe({slice}, devices.answers(), now += kHeartbeat);
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->device, slice);
  EXPECT_EQ(loss->missed, 3u);
  EXPECT_EQ(loss->lastGoodNs, kHeartbeat);
  EXPECT_EQ(probes.missed(slice), 0u) << "the count starts again after a loss";
}

TEST(DeviceProbes, AnAnswerStartsTheCountAgain) {
  DeviceProbes probes(3);
  ProbedDevice port{ProbedKind::RdmaQpGroup, 7};
  Devices devices;
  uint64_t now = 0;
  for (int round = 0; round < 10; ++round) {
    devices.down.insert(port);
    EXPECT_FALSE(probes.probe({port}, devices.answers(), now += kHeartbeat));
    EXPECT_FALSE(probes.probe({port}, devices.answers(), now += kHeartbeat));
    devices.down.clear(); // a flapping port that answers every third heartbeat is never lost
    EXPECT_FALSE(probes.probe({port}, devices.answers(), now += kHeartbeat));
  }
}

TEST(DeviceProbes, ADeviceThatNeverAnsweredHasNoLastGoodTime) {
  DeviceProbes probes(1);
  ProbedDevice slice{ProbedKind::GpuSlice, 4};
  Devices devices;
  devices.down.insert(slice);
  std::optional<DeviceLoss> loss = probes.probe({slice}, devices.answers(), 5 * kHeartbeat);
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->lastGoodNs, 0u);
}

TEST(DeviceProbes, ASliceAndAQueuePairGroupOfOneIdAreTwoDevices) {
  DeviceProbes probes(2);
  ProbedDevice slice{ProbedKind::GpuSlice, 3}, group{ProbedKind::RdmaQpGroup, 3};
  Devices devices;
  devices.down.insert(group);
  EXPECT_FALSE(probes.probe({slice, group}, devices.answers(), kHeartbeat));
  EXPECT_EQ(probes.missed(slice), 0u);
  EXPECT_EQ(probes.missed(group), 1u);
  std::optional<DeviceLoss> loss = probes.probe({slice, group}, devices.answers(), 2 * kHeartbeat);
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->device, group);
}

TEST(DeviceProbes, OneLossAHeartbeatAndTheDevicesAfterItAreNotAsked) {
  DeviceProbes probes(1);
  ProbedDevice a{ProbedKind::GpuSlice, 1}, b{ProbedKind::GpuSlice, 2}, c{ProbedKind::RdmaQpGroup, 9};
  Devices devices;
  devices.down = {b, c};
  std::optional<DeviceLoss> loss = probes.probe({a, b, c}, devices.answers(), kHeartbeat);
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->device, b);
  EXPECT_EQ(devices.asked, (std::vector<ProbedDevice>{a, b}));
  EXPECT_EQ(probes.missed(c), 0u);
}
