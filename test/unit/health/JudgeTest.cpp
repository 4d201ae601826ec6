// The health judge in virtual time: samples built by hand, their times from a ManualClock.
#include "health/Judge.h"
#include "support/Clock.h"

#include <gtest/gtest.h>

using namespace msc;
using namespace msc::health;

namespace {

constexpr uint64_t Second = 1'000'000'000;

Sample base(const ManualClock &clock) {
  Sample s;
  s.monotonicNs = clock.monotonicNs();
  s.thermal.push_back({"x86_pkg_temp", "/sys/class/thermal/thermal_zone0/temp", 50000, 100000});
  RdmaReading port;
  port.device = "mlx5_0";
  port.port = 1;
  port.path = "/sys/class/infiniband/mlx5_0/ports/1";
  port.state = "ACTIVE";
  port.errorCounters = {{"symbol_error", 0}, {"link_downed", 0}};
  s.rdma.push_back(port);
  s.edac.push_back({"mc0", "/sys/devices/system/edac/mc/mc0", 0, 0});
  s.hugepages.push_back({0, 2u << 20, "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", 1024});
  s.nvme.push_back({"nvme0", "/dev/nvme0", 0, 100, 10, 0});
  return s;
}

std::vector<std::string> codes(const Verdict &v) {
  std::vector<std::string> out;
  for (const Reason &r : v.reasons)
    out.push_back(diagInfo(r.code).name.str());
  return out;
}

TEST(HealthJudge, HealthyNodeIsHealthy) {
  ManualClock clock;
  Verdict v = judge(base(clock), nullptr, nullptr, Policy{});
  EXPECT_EQ(v.level, Level::Healthy);
  EXPECT_TRUE(v.reasons.empty());
  EXPECT_EQ(exitStatus(v.level), 0);
}

TEST(HealthJudge, TemperatureAgainstTheTopologysLimit) {
  ManualClock clock;
  Sample s = base(clock);
  s.thermal[0].tempMilliC = 89999; // just below limit - margin
  EXPECT_EQ(judge(s, nullptr, nullptr, Policy{}).level, Level::Healthy);
  s.thermal[0].tempMilliC = 90000;
  Verdict warm = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(warm.level, Level::Degraded);
  EXPECT_EQ(codes(warm), std::vector<std::string>{"WRN_HEALTH_001"});
  s.thermal[0].tempMilliC = 100000;
  Verdict hot = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(hot.level, Level::Failed);
  EXPECT_EQ(codes(hot), std::vector<std::string>{"ERR_HEALTH_001"});
  EXPECT_EQ(hot.reasons[0].path, "/sys/class/thermal/thermal_zone0/temp");
  EXPECT_EQ(hot.reasons[0].evidence, "100000");
  EXPECT_EQ(exitStatus(hot.level), 2);
  // A sensor without a limit is never judged.
  s.thermal[0].limitMilliC.reset();
  EXPECT_EQ(judge(s, nullptr, nullptr, Policy{}).level, Level::Healthy);
}

TEST(HealthJudge, PortDownIsFailed) {
  ManualClock clock;
  Sample s = base(clock);
  s.rdma[0].state = "DOWN";
  Verdict v = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(v.level, Level::Failed);
  EXPECT_EQ(codes(v), std::vector<std::string>{"ERR_HEALTH_002"});
  EXPECT_EQ(v.reasons[0].message, "RDMA port 'mlx5_0:1' is DOWN, not ACTIVE");
}

TEST(HealthJudge, RdmaCounterGrowthIsARateAgainstThePolicy) {
  ManualClock clock;
  Monitor monitor;
  EXPECT_EQ(monitor.observe(base(clock)).level, Level::Healthy);
  // 5 errors in a minute: at or under 6 a minute, healthy.
  clock.advance(60 * Second);
  Sample s = base(clock);
  s.rdma[0].errorCounters["symbol_error"] = 5;
  EXPECT_EQ(monitor.observe(s).level, Level::Healthy);
  // 7 more in the next minute: degraded, with the counter's growth as evidence.
  clock.advance(60 * Second);
  s = base(clock);
  s.rdma[0].errorCounters["symbol_error"] = 12;
  Verdict v = monitor.observe(s);
  EXPECT_EQ(v.level, Level::Degraded);
  ASSERT_EQ(codes(v), std::vector<std::string>{"WRN_HEALTH_002"});
  EXPECT_EQ(v.reasons[0].evidence, "5 -> 12");
  EXPECT_EQ(v.reasons[0].path, "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error");
  EXPECT_NE(v.reasons[0].message.find("grew by 7 in 60.000s (7.0 a minute, more than 6.0)"), std::string::npos)
      << v.reasons[0].message;
  // No growth since: healthy again (growth is judged between samples).
  clock.advance(60 * Second);
  s.monotonicNs = clock.monotonicNs();
  EXPECT_EQ(monitor.observe(s).level, Level::Healthy);
}

TEST(HealthJudge, EdacUncorrectedFailsCorrectedGrowthDegrades) {
  ManualClock clock;
  Sample first = base(clock);
  clock.advance(Second);
  Sample now = base(clock);
  now.edac[0].corrected = 3;
  Verdict v = judge(now, &first, &first, Policy{});
  EXPECT_EQ(v.level, Level::Degraded);
  EXPECT_EQ(codes(v), std::vector<std::string>{"WRN_HEALTH_003"});
  // A single sample with corrected errors: growth is not known, nothing judged.
  EXPECT_EQ(judge(now, nullptr, nullptr, Policy{}).level, Level::Healthy);
  now.edac[0].uncorrected = 1;
  v = judge(now, &first, &first, Policy{});
  EXPECT_EQ(v.level, Level::Failed);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"ERR_HEALTH_003", "WRN_HEALTH_003"})); // worst first
}

TEST(HealthJudge, HugepagesShrinkingAgainstTheFirstSample) {
  ManualClock clock;
  Monitor monitor;
  monitor.observe(base(clock));
  clock.advance(Second);
  Sample s = base(clock);
  s.hugepages[0].total = 1000;
  EXPECT_EQ(codes(monitor.observe(s)), std::vector<std::string>{"WRN_HEALTH_004"});
  // Still below the first sample though unchanged since the previous: still degraded.
  clock.advance(Second);
  s.monotonicNs = clock.monotonicNs();
  EXPECT_EQ(monitor.observe(s).level, Level::Degraded);
  // Grown back: healthy.
  clock.advance(Second);
  s.monotonicNs = clock.monotonicNs();
  s.hugepages[0].total = 1024;
  EXPECT_EQ(monitor.observe(s).level, Level::Healthy);
}

TEST(HealthJudge, NvmeCriticalWarningBits) {
  ManualClock clock;
  Sample s = base(clock);
  s.nvme[0].criticalWarning = 0x01;
  EXPECT_EQ(codes(judge(s, nullptr, nullptr, Policy{})), std::vector<std::string>{"WRN_HEALTH_005"});
  s.nvme[0].criticalWarning = 0x0c;
  Verdict v = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(codes(v), std::vector<std::string>{"ERR_HEALTH_004"});
  EXPECT_EQ(v.reasons[0].message, "NVMe 'nvme0' critical warning 0x0c: reliability degraded, read-only");
  Sample before = base(clock);
  clock.advance(Second);
  Sample after = base(clock);
  after.nvme[0].mediaErrors = 2;
  EXPECT_EQ(codes(judge(after, &before, &before, Policy{})), std::vector<std::string>{"WRN_HEALTH_006"});
}

TEST(HealthJudge, KernelLogClasses) {
  ManualClock clock;
  Sample s = base(clock);
  s.kernelLogPath = "/dev/kmsg";
  s.kernelLog.push_back({"nvme-io-error", 2, "nvme nvme0: I/O 12 QID 3 timeout, aborting"});
  EXPECT_EQ(judge(s, nullptr, nullptr, Policy{}).level, Level::Degraded);
  s.kernelLog.push_back({"nvidia-xid-fatal", 1, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."});
  Verdict v = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(v.level, Level::Failed);
  EXPECT_EQ(codes(v), (std::vector<std::string>{"ERR_HEALTH_005", "WRN_HEALTH_007"}));
  EXPECT_EQ(v.reasons[0].evidence, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
}

// Xids NVML delivered: a fatal code fails the node, another degrades it, and the monitor carries
// them from look to look (NVML delivers each once) until the node reboots.
TEST(HealthJudge, GpuXidsThroughNvmlFailOrDegradeUntilTheNodeReboots) {
  ManualClock clock(10 * Second);
  Monitor monitor;
  EXPECT_EQ(monitor.observe(base(clock)).level, Level::Healthy);

  clock.advance(Second);
  Sample s = base(clock);
  s.gpuXids.push_back({"0000:07:00.0", "libnvidia-ml.so.1", 31, 2, clock.monotonicNs(), clock.monotonicNs()});
  Verdict v = monitor.observe(s);
  EXPECT_EQ(v.level, Level::Degraded);
  ASSERT_EQ(codes(v), std::vector<std::string>{"WRN_HEALTH_010"});
  EXPECT_EQ(v.reasons[0].message, "GPU 0000:07:00.0 reported Xid 31 through NVML (2 event(s))");
  EXPECT_EQ(v.reasons[0].path, "libnvidia-ml.so.1");
  EXPECT_EQ(v.reasons[0].evidence,
            "nvmlEventTypeXidCriticalError, eventData 31: 2 event(s), the first drained at 11.000s, the last at "
            "11.000s on the monotonic clock");

  // A fatal Xid on another GPU, and the same Xid again on the first: failed, counts summed.
  clock.advance(Second);
  s = base(clock);
  s.gpuXids.push_back({"0000:0b:00.0", "libnvidia-ml.so.1", 79, 1, clock.monotonicNs(), clock.monotonicNs()});
  s.gpuXids.push_back({"0000:07:00.0", "libnvidia-ml.so.1", 31, 1, clock.monotonicNs(), clock.monotonicNs()});
  v = monitor.observe(s);
  EXPECT_EQ(v.level, Level::Failed);
  ASSERT_EQ(codes(v), (std::vector<std::string>{"ERR_HEALTH_010", "WRN_HEALTH_010"})); // worst first
  EXPECT_EQ(v.reasons[0].message, "GPU 0000:0b:00.0 reported Xid 79 through NVML (1 event(s))");
  EXPECT_EQ(v.reasons[1].message, "GPU 0000:07:00.0 reported Xid 31 through NVML (3 event(s))");
  EXPECT_EQ(v.reasons[1].evidence,
            "nvmlEventTypeXidCriticalError, eventData 31: 3 event(s), the first drained at 11.000s, the last at "
            "12.000s on the monotonic clock");

  // Nothing new an hour later: still failed, the samples kept hold both.
  clock.advance(3600 * Second);
  v = monitor.observe(base(clock));
  EXPECT_EQ(codes(v), (std::vector<std::string>{"ERR_HEALTH_010", "WRN_HEALTH_010"}));
  ASSERT_EQ(monitor.previous()->gpuXids.size(), 2u);

  // Rebooted (the monotonic clock started again): the GPUs were reset, nothing carried.
  clock.set(5 * Second);
  EXPECT_EQ(monitor.observe(base(clock)).level, Level::Healthy);
  EXPECT_TRUE(monitor.previous()->gpuXids.empty());

  // judge() alone judges the sample's own Xids; an unknown Xid (999) is not fatal.
  Sample unknown = base(clock);
  unknown.gpuXids.push_back({"0000:07:00.0", "libnvidia-ml.so.1", 999, 1, clock.monotonicNs(), clock.monotonicNs()});
  EXPECT_EQ(codes(judge(unknown, nullptr, nullptr, Policy{})), std::vector<std::string>{"WRN_HEALTH_010"});
}

TEST(HealthJudge, MalformedValueDegradesAndNothingElse) {
  ManualClock clock;
  Sample s = base(clock);
  s.malformed.push_back({"/sys/devices/system/edac/mc/mc1/ue_count", "lots", "an integer"});
  Verdict v = judge(s, nullptr, nullptr, Policy{});
  EXPECT_EQ(v.level, Level::Degraded);
  EXPECT_EQ(codes(v), std::vector<std::string>{"ERR_HEALTH_006"});
}

TEST(HealthJudge, PreviousFromAnotherBootIsNotGrowth) {
  ManualClock clock(100 * Second);
  Sample old = base(clock);
  old.rdma[0].errorCounters["symbol_error"] = 0;
  clock.set(5 * Second); // rebooted: the monotonic clock started again
  Sample now = base(clock);
  now.rdma[0].errorCounters["symbol_error"] = 100;
  Verdict v = judge(now, &old, &old, Policy{});
  EXPECT_EQ(v.level, Level::Healthy);
}

TEST(HealthJudge, SampleRoundTripsThroughJson) {
  ManualClock clock;
  Sample s = base(clock);
  s.kernelLog.push_back({"edac-ce", 3, "EDAC MC0: 1 CE memory read error"});
  s.kernelLogPath = "/dev/kmsg";
  s.gpuXids.push_back({"0000:07:00.0", "libnvidia-ml.so.1", 79, 2, 1 * Second, 3 * Second});
  llvm::Expected<Sample> back = sampleFromJson(sampleToJson(s));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(llvm::json::Value(sampleToJson(*back)), llvm::json::Value(sampleToJson(s)));
  ASSERT_EQ(back->gpuXids.size(), 1u);
  EXPECT_EQ(back->gpuXids[0].xid, 79u);
  EXPECT_EQ(back->gpuXids[0].events, 2u);
  EXPECT_EQ(back->gpuXids[0].firstNs, 1 * Second);
  EXPECT_EQ(back->gpuXids[0].lastNs, 3 * Second);
  // A state file kept before Xid events were read has no "gpu_xids": none, not an error.
  llvm::json::Value older = sampleToJson(s);
  older.getAsObject()->erase("gpu_xids");
  llvm::Expected<Sample> old = sampleFromJson(older);
  ASSERT_TRUE(bool(old)) << llvm::toString(old.takeError());
  EXPECT_TRUE(old->gpuXids.empty());
  llvm::json::Value wrong = sampleToJson(s);
  (*wrong.getAsObject()->getArray("gpu_xids"))[0].getAsObject()->erase("xid");
  llvm::Expected<Sample> missing = sampleFromJson(wrong);
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()), "'xid' is not a non-negative integer");
  llvm::json::Value broken = llvm::json::Object{{"monotonic_ns", "soon"}};
  llvm::Expected<Sample> bad = sampleFromJson(broken);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()), "'monotonic_ns' is not a non-negative integer");
}

} // namespace
