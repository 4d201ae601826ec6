// The sampler on a recorded sysfs tree, extracted into a directory of the test's own and changed:
// the values it reads, what it says it could not read, and malformed files.
#include "hal/Loader.h"
#include "health/Judge.h"
#include "health/Sampler.h"
#include "support/Clock.h"
#include "test/unit/RecordedSysfsTree.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace msc;
using namespace msc::health;

namespace {

using DellTree = test::RecordedSysfsTree;

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

// The recorded 4xA100 node's GPUs, their memory health read through a fake NVML (fake_nvml/) whose
// state file the test writes: ECC counters, pending repairs, and a GPU NVML does not know.
TEST(HealthSampler, GpuMemoryThroughNvml) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  std::optional<hal::Topology> topo = hal::loadTopology(
      hal::TopologySource::file(std::string(MSC_SOURCE_DIR) +
                                "/../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"),
      diags);
  ASSERT_TRUE(topo);
  std::vector<hal::GpuRef> gpus = topo->gpus();
  ASSERT_EQ(gpus.size(), 4u);
  llvm::SmallString<128> state;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("msc-fake-nvml", "txt", state));
  auto writeState = [&](const std::string &text) { std::ofstream(std::string(state), std::ios::trunc) << text; };
  ::setenv("MSC_FAKE_NVML_STATE", state.c_str(), 1);
  SamplerOptions options{"/nonexistent-root", std::string(MSC_FAKE_NVML_LIB)};
  ManualClock clock;

  // GPU 0 healthy, GPU 1 with ECC off, GPU 2 lost data and waits for a remap, GPU 3 unknown to NVML.
  writeState(gpus[0].info->pci.str() + " 0 0 0 0 0\n" + gpus[1].info->pci.str() + " - - 0 0 0\n" +
             gpus[2].info->pci.str() + " 5 2 0 1 0\n");
  Sample s = takeSample(*topo, options, clock);
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_EQ(s.gpus[0].eccCorrected, 0u);
  EXPECT_FALSE(s.gpus[1].eccCorrected) << "ECC off: not supported, not zero";
  EXPECT_EQ(s.gpus[2].eccUncorrected, 2u);
  EXPECT_TRUE(s.gpus[2].remapPending);
  EXPECT_TRUE(hasNote(s, "GPU " + gpus[3].info->pci.str() + ": NVML does not know it"));
  Verdict v = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(v.level, Level::Failed);
  ASSERT_EQ(v.reasons.size(), 2u);
  EXPECT_EQ(v.reasons[0].code, DiagCode::ERR_HEALTH_008);
  EXPECT_EQ(v.reasons[0].message,
            "GPU " + gpus[2].info->pci.str() + " reports 2 uncorrected ECC error(s) since its driver loaded");
  EXPECT_EQ(v.reasons[0].evidence, "ECC corrected 5, uncorrected 2, row remapping pending");
  EXPECT_EQ(v.reasons[1].code, DiagCode::WRN_HEALTH_008);

  // Corrected errors growing between two looks: degraded; a failed remap: failed.
  writeState(gpus[0].info->pci.str() + " 7 0 0 0 0\n" + gpus[1].info->pci.str() + " - - 1 0 1\n");
  clock.advance(1'000'000'000);
  Sample later = takeSample(*topo, options, clock);
  Verdict grown = judge(later, &s, &s, Policy{});
  EXPECT_EQ(grown.level, Level::Failed);
  std::vector<DiagCode> codes;
  for (const Reason &r : grown.reasons)
    codes.push_back(r.code);
  EXPECT_EQ(codes, (std::vector<DiagCode>{DiagCode::ERR_HEALTH_009, DiagCode::WRN_HEALTH_009, DiagCode::WRN_HEALTH_008}));
  EXPECT_EQ(grown.reasons[2].message, "GPU " + gpus[1].info->pci.str() + " has retired pages waiting for a GPU reset");
  EXPECT_EQ(grown.reasons[1].message, "GPU " + gpus[0].info->pci.str() + " corrected ECC errors grew from 0 to 7");

  // Kept in a state file and read back the same.
  llvm::Expected<Sample> back = sampleFromJson(sampleToJson(later));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[0].eccCorrected, 7u);
  EXPECT_FALSE(back->gpus[1].eccUncorrected);
  EXPECT_TRUE(back->gpus[1].remapFailed);

  // Without a library named, a recorded tree's GPUs are not this machine's: not read, said so.
  Sample recorded = takeSample(*topo, {"/nonexistent-root"}, clock);
  EXPECT_TRUE(recorded.gpus.empty());
  EXPECT_TRUE(hasNote(recorded, "GPU memory health through NVML: not read under a recorded tree"));
  // A library that cannot be loaded is a note, not a verdict.
  Sample absent = takeSample(*topo, {"/nonexistent-root", std::string("libnvidia-ml-absent.so.1")}, clock);
  EXPECT_TRUE(absent.gpus.empty());
  EXPECT_TRUE(hasNote(absent, "libnvidia-ml-absent.so.1 cannot be loaded"));
  ::unsetenv("MSC_FAKE_NVML_STATE");
  llvm::sys::fs::remove(state);
}

namespace {

std::optional<hal::Topology> loadFourA100() {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  return hal::loadTopology(
      hal::TopologySource::file(std::string(MSC_SOURCE_DIR) +
                                "/../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"),
      diags);
}

// A file a test writes and removes, named for the fake NVML in an environment variable.
struct FakeNvmlFile {
  FakeNvmlFile(const char *variable, const std::string &text) : variable(variable) {
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("msc-fake-nvml", "txt", path));
    write(text, std::ios::trunc);
    ::setenv(variable, path.c_str(), 1);
  }
  ~FakeNvmlFile() {
    ::unsetenv(variable);
    llvm::sys::fs::remove(path);
  }
  void append(const std::string &text) { write(text, std::ios::app); }
  void write(const std::string &text, std::ios::openmode mode) { std::ofstream(std::string(path), mode) << text; }
  const char *variable;
  llvm::SmallString<128> path;
};

} // namespace

// The agent's path: one process, NVML opened once, looks a second apart. Each look drains the Xid
// events NVML queued since the last one (the fake delivers each line of its Xid file once, the test
// appends lines between looks); the monitor carries them, so a fatal Xid keeps the node failed.
TEST(HealthSampler, GpuXidsThroughNvmlEvents) {
  std::optional<hal::Topology> topo = loadFourA100();
  ASSERT_TRUE(topo);
  std::vector<hal::GpuRef> gpus = topo->gpus();
  ASSERT_EQ(gpus.size(), 4u);
  std::string pci[4];
  for (int i = 0; i < 4; ++i)
    pci[i] = gpus[i].info->pci.str();
  FakeNvmlFile state("MSC_FAKE_NVML_STATE", pci[0] + " 0 0 0 0 0\n" + pci[1] + " 0 0 0 0 0\n" + pci[2] +
                                                " 0 0 0 0 0\n" + pci[3] + " 0 0 0 0 0\n");
  // GPU 3 stands for a consumer GPU: NVML_ERROR_NOT_SUPPORTED when it is registered.
  ::setenv("MSC_FAKE_NVML_XID_UNSUPPORTED", pci[3].c_str(), 1);
  // Queued after the first look registers the GPUs (the fake delivers at the first wait what is there).
  FakeNvmlFile xids("MSC_FAKE_NVML_XIDS", pci[0] + " 13\n");
  SamplerOptions options{"/nonexistent-root", std::string(MSC_FAKE_NVML_LIB)};
  ManualClock clock(100 * 1'000'000'000ull);
  Monitor monitor;

  Sample first = takeSample(*topo, options, clock);
  ASSERT_EQ(first.gpuXids.size(), 1u);
  EXPECT_EQ(first.gpuXids[0].pci, pci[0]);
  EXPECT_EQ(first.gpuXids[0].xid, 13u);
  EXPECT_EQ(first.gpuXids[0].events, 1u);
  EXPECT_EQ(first.gpuXids[0].library, MSC_FAKE_NVML_LIB);
  EXPECT_TRUE(hasNote(first, "GPU " + pci[3] + ": Xid events through NVML not read (NVML does not support Xid "
                                               "events on it (NVML_ERROR_NOT_SUPPORTED))"));
  Verdict v = monitor.observe(first);
  EXPECT_EQ(v.level, Level::Degraded);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0].code, DiagCode::WRN_HEALTH_010);
  EXPECT_EQ(v.reasons[0].message, "GPU " + pci[0] + " reported Xid 13 through NVML (1 event(s))");

  // Between the looks: a fatal Xid on GPU 1, Xid 13 again on GPU 0, and one on GPU 3, which no set
  // waits for (lost, as NVML loses it).
  xids.append(pci[1] + " 79\n" + pci[3] + " 79\n" + pci[0] + " 13\n");
  clock.advance(1'000'000'000);
  Sample second = takeSample(*topo, options, clock);
  ASSERT_EQ(second.gpuXids.size(), 2u) << "only the events since the last look";
  EXPECT_EQ(second.gpuXids[0].pci, pci[1]);
  EXPECT_EQ(second.gpuXids[0].xid, 79u);
  EXPECT_EQ(second.gpuXids[1].pci, pci[0]);
  EXPECT_EQ(second.gpuXids[1].events, 1u);
  EXPECT_FALSE(hasNote(second, "registered by this look")) << "registered once, at the first look";
  v = monitor.observe(std::move(second));
  EXPECT_EQ(v.level, Level::Failed);
  ASSERT_EQ(v.reasons.size(), 2u);
  EXPECT_EQ(v.reasons[0].code, DiagCode::ERR_HEALTH_010);
  EXPECT_EQ(v.reasons[0].message, "GPU " + pci[1] + " reported Xid 79 through NVML (1 event(s))");
  EXPECT_EQ(v.reasons[0].path, MSC_FAKE_NVML_LIB);
  EXPECT_EQ(v.reasons[1].message, "GPU " + pci[0] + " reported Xid 13 through NVML (2 event(s))");
  EXPECT_EQ(v.reasons[1].evidence, "nvmlEventTypeXidCriticalError, eventData 13: 2 event(s), the first drained at "
                                   "100.000s, the last at 101.000s on the monotonic clock");

  // Nothing new: still failed, nothing delivered twice.
  clock.advance(1'000'000'000);
  Sample third = takeSample(*topo, options, clock);
  EXPECT_TRUE(third.gpuXids.empty());
  v = monitor.observe(std::move(third));
  EXPECT_EQ(v.level, Level::Failed);
  EXPECT_EQ(v.reasons[1].message, "GPU " + pci[0] + " reported Xid 13 through NVML (2 event(s))");

  // What `--state` keeps reads back with the Xids.
  llvm::Expected<Sample> back = sampleFromJson(sampleToJson(*monitor.previous()));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  ASSERT_EQ(back->gpuXids.size(), 2u);
  EXPECT_EQ(back->gpuXids[0].pci, pci[0]);
  EXPECT_EQ(back->gpuXids[0].events, 2u);
  ::unsetenv("MSC_FAKE_NVML_XID_UNSUPPORTED");
}

// Older drivers: nvmlEventSetWait (before _v2, without the MIG instance fields) still delivers the
// events; a library without the event API is a note, and the memory health is read all the same.
TEST(HealthSampler, GpuXidsWithOlderNvml) {
  std::optional<hal::Topology> topo = loadFourA100();
  ASSERT_TRUE(topo);
  std::string pci = topo->gpus()[0].info->pci.str();
  FakeNvmlFile state("MSC_FAKE_NVML_STATE", pci + " 0 0 0 0 0\n");
  FakeNvmlFile xids("MSC_FAKE_NVML_XIDS", pci + " 48\n");
  ManualClock clock;

  Sample v1 = takeSample(*topo, {"/nonexistent-root", std::string(MSC_FAKE_NVML_WAIT_V1_LIB)}, clock);
  ASSERT_EQ(v1.gpuXids.size(), 1u);
  EXPECT_EQ(v1.gpuXids[0].xid, 48u);
  EXPECT_EQ(judge(v1, nullptr, nullptr, Policy{}).reasons[0].code, DiagCode::ERR_HEALTH_010);

  Sample none = takeSample(*topo, {"/nonexistent-root", std::string(MSC_FAKE_NVML_NO_EVENTS_LIB)}, clock);
  EXPECT_TRUE(none.gpuXids.empty());
  ASSERT_EQ(none.gpus.size(), 1u);
  EXPECT_TRUE(hasNote(none, std::string("GPU Xid events through NVML: ") + MSC_FAKE_NVML_NO_EVENTS_LIB +
                                " has no event API (nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait, "
                                "nvmlEventSetFree); NVIDIA Xid lines are judged from the kernel log"));
}
