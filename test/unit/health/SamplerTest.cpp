// The sampler on a recorded sysfs tree, extracted into a directory of the test's own and changed:
// the values it reads, what it says it could not read, and malformed files.
#include "hal/Loader.h"
#include "health/Judge.h"
#include "health/Sampler.h"
#include "support/Clock.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace msc;
using namespace msc::health;

namespace {

// The Dell tree: an mlx4_0 port, an NVMe controller, 2 MiB hugepages on two NUMA nodes.
struct DellTree {
  std::string dir, root;
  DellTree() {
    llvm::SmallString<128> d;
    if (llvm::sys::fs::createUniqueDirectory("msc-health-sysfs", d))
      return;
    dir = std::string(d);
    std::string cmd = "tar -xjf '" + std::string(MSC_SOURCE_DIR) +
                      "/../shared/fixtures/topologies/sysfs/hwloc-32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2' -C '" +
                      dir + "'";
    if (std::system(cmd.c_str()) == 0)
      root = dir + "/32em64t-2n8c+1mic";
  }
  ~DellTree() {
    if (!dir.empty())
      std::filesystem::remove_all(dir);
  }
  void write(const std::string &rel, const std::string &content) const {
    std::filesystem::create_directories(std::filesystem::path(root + rel).parent_path());
    std::ofstream(root + rel, std::ios::binary | std::ios::trunc) << content;
  }
  hal::Topology load() const {
    CollectingConsumer consumer;
    DiagnosticEngine diags(nullptr, consumer);
    std::optional<hal::Topology> t = hal::loadTopology(hal::TopologySource::sysfs(root), diags);
    EXPECT_TRUE(t.has_value());
    return t ? *t : hal::Topology{};
  }
};

bool hasNote(const Sample &s, llvm::StringRef text) {
  return llvm::any_of(s.notes, [&](const std::string &n) { return llvm::StringRef(n).contains(text); });
}

TEST(HealthSampler, RecordedTreeAsItIs) {
  DellTree tree;
  ASSERT_FALSE(tree.root.empty());
  hal::Topology topo = tree.load();
  ManualClock clock;
  Sample s = takeSample(topo, {tree.root}, clock);
  EXPECT_EQ(s.monotonicNs, clock.monotonicNs());
  ASSERT_EQ(s.rdma.size(), 1u);
  EXPECT_EQ(s.rdma[0].key(), "mlx4_0:1");
  EXPECT_EQ(s.rdma[0].state, "ACTIVE");
  EXPECT_TRUE(s.rdma[0].errorCounters.count("symbol_error"));
  EXPECT_FALSE(s.hugepages.empty());
  EXPECT_TRUE(s.edac.empty());
  EXPECT_TRUE(s.malformed.empty());
  EXPECT_TRUE(hasNote(s, "NVMe nvme0: no /dev/nvme0, SMART log not read")) << s.notes.size();
  EXPECT_TRUE(hasNote(s, "kernel log: no /dev/kmsg to read"));
  EXPECT_TRUE(hasNote(s, "EDAC: no memory controller"));
  EXPECT_EQ(judge(s, nullptr, nullptr, Policy{}).level, Level::Healthy);
}

TEST(HealthSampler, ThermalEdacNvmeAndKernelLog) {
  DellTree tree;
  ASSERT_FALSE(tree.root.empty());
  tree.write("/sys/class/thermal/thermal_zone0/type", "x86_pkg_temp\n");
  tree.write("/sys/class/thermal/thermal_zone0/temp", "45000\n");
  tree.write("/sys/class/thermal/thermal_zone0/trip_point_0_type", "critical\n");
  tree.write("/sys/class/thermal/thermal_zone0/trip_point_0_temp", "100000\n");
  tree.write("/sys/devices/system/edac/mc/mc0/ce_count", "4\n");
  tree.write("/sys/devices/system/edac/mc/mc0/ue_count", "0\n");
  std::string page(512, '\0');
  page[0] = 0x01;
  page[3] = 5;
  page[4] = 10;
  page[160] = 7;
  tree.write("/dev/nvme0", page);
  tree.write("/dev/kmsg", "6,1,10,-;mlx4_core: firmware up\n4,2,20,-;nvme nvme0: I/O 7 QID 2 timeout, aborting\n"
                          " SUBSYSTEM=pci\n");
  hal::Topology topo = tree.load();
  ManualClock clock;
  Sample s = takeSample(topo, {tree.root}, clock);
  ASSERT_EQ(s.thermal.size(), 1u);
  EXPECT_EQ(s.thermal[0].path, "/sys/class/thermal/thermal_zone0/temp");
  EXPECT_EQ(s.thermal[0].limitMilliC, 100000);
  ASSERT_EQ(s.edac.size(), 1u);
  EXPECT_EQ(s.edac[0].corrected, 4u);
  ASSERT_EQ(s.nvme.size(), 1u);
  EXPECT_EQ(s.nvme[0].criticalWarning, 1);
  EXPECT_EQ(s.nvme[0].availableSpare, 5);
  EXPECT_EQ(s.nvme[0].mediaErrors, 7u);
  ASSERT_EQ(s.kernelLog.size(), 1u);
  EXPECT_EQ(s.kernelLog[0].name, "nvme-io-error");
  EXPECT_EQ(s.kernelLog[0].last, "nvme nvme0: I/O 7 QID 2 timeout, aborting");

  // Temperature re-read, not the topology's: the sensor heats up after discovery.
  tree.write("/sys/class/thermal/thermal_zone0/temp", "101000\n");
  clock.advance(1'000'000'000);
  Sample hot = takeSample(topo, {tree.root}, clock);
  EXPECT_EQ(hot.thermal[0].tempMilliC, 101000);
  Verdict v = judge(hot, &s, &s, Policy{});
  EXPECT_EQ(v.level, Level::Failed);
  EXPECT_EQ(diagInfo(v.reasons[0].code).name, "ERR_HEALTH_001");
}

TEST(HealthSampler, MalformedFilesAreRecordedNotGuessed) {
  DellTree tree;
  ASSERT_FALSE(tree.root.empty());
  tree.write("/sys/devices/system/edac/mc/mc0/ce_count", "lots\n");
  tree.write("/sys/devices/system/edac/mc/mc0/ue_count", "0\n");
  tree.write("/dev/nvme0", "short");
  hal::Topology topo = tree.load();
  ManualClock clock;
  Sample s = takeSample(topo, {tree.root}, clock);
  ASSERT_EQ(s.malformed.size(), 2u);
  EXPECT_EQ(s.malformed[0].path, "/sys/devices/system/edac/mc/mc0/ce_count");
  EXPECT_EQ(s.malformed[0].text, "lots");
  EXPECT_EQ(s.malformed[1].path, "/dev/nvme0");
  EXPECT_TRUE(s.edac.empty());
  EXPECT_FALSE(hasNote(s, "EDAC: no memory controller"));
  Verdict v = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(v.level, Level::Degraded);
  for (const Reason &r : v.reasons)
    EXPECT_EQ(diagInfo(r.code).name, "ERR_HEALTH_006");
}

} // namespace
