// The agent's health judgement (cluster/agent/HealthReporter.h) on a recorded sysfs tree changed at
// run time, on a manual clock: judged every interval, handed on only when the verdict changes.
#include "cluster/agent/HealthReporter.h"

#include "test/unit/RecordedSysfsTree.h"

#include <gtest/gtest.h>

namespace msc::cluster {
namespace {

// The recorded Dell tree with a thermal zone whose critical trip point is 100 C.
struct HotTree : test::RecordedSysfsTree {
  HotTree() : RecordedSysfsTree("msc-agent-health") {
    if (!root.empty())
      addThermalZone();
  }
};

constexpr uint64_t kSecond = 1'000'000'000;

TEST(HealthReporter, JudgesEveryIntervalAndHandsOnOnlyAChangedVerdict) {
  HotTree tree;
  ASSERT_FALSE(tree.root.empty());
  ManualClock clock;
  HealthReporter reporter(tree.load(), {tree.root, std::chrono::seconds(2)}, clock);
  std::optional<NodeHealth> first = reporter.poll();
  ASSERT_TRUE(first) << "the first call judges at once";
  EXPECT_EQ(first->level, HealthLevel::Healthy) << (first->reasons.empty() ? "" : first->reasons[0].message);

  tree.write("/sys/class/thermal/thermal_zone0/temp", "105000\n");
  clock.advance(kSecond);
  EXPECT_FALSE(reporter.poll()) << "not due yet";
  clock.advance(kSecond);
  std::optional<NodeHealth> hot = reporter.poll();
  ASSERT_TRUE(hot);
  EXPECT_EQ(hot->level, HealthLevel::Failed);
  ASSERT_FALSE(hot->reasons.empty());
  EXPECT_EQ(hot->reasons[0].code, "ERR_HEALTH_001");
  EXPECT_EQ(hot->reasons[0].message,
            "thermal sensor 'x86_pkg_temp' at 105.0 C is at or above its critical limit 100.0 C");
  EXPECT_EQ(reporter.lastVerdict().reasons[0].evidence, "105000");

  clock.advance(2 * kSecond);
  EXPECT_FALSE(reporter.poll()) << "judged again, the same: nothing to publish";
  tree.write("/sys/class/thermal/thermal_zone0/temp", "50000\n");
  clock.advance(2 * kSecond);
  std::optional<NodeHealth> cool = reporter.poll();
  ASSERT_TRUE(cool);
  EXPECT_EQ(cool->level, HealthLevel::Healthy);
  EXPECT_EQ(reporter.current(), cool);
}

TEST(HealthReporter, TheVerdictAsTheRegistrationCarriesIt) {
  health::Verdict v;
  v.level = health::Level::Degraded;
  v.reasons.push_back({DiagCode::WRN_HEALTH_004, health::Level::Degraded, "hugepage pool shrank", "/sys/x", "4"});
  NodeHealth h = publishedHealth(v);
  EXPECT_EQ(h.level, HealthLevel::Degraded);
  ASSERT_EQ(h.reasons.size(), 1u);
  EXPECT_EQ(h.reasons[0].code, "WRN_HEALTH_004");
  EXPECT_EQ(h.reasons[0].message, "hugepage pool shrank");
}

} // namespace
} // namespace msc::cluster
