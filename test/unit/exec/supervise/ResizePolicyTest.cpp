// The resize policy alone: one resize per drift, none inside the band, none above the scale-up
// limit, a shed at the throttle limit, cool-down and hysteresis against flapping.
#include "executor/supervise/ResizePolicy.h"

#include <gtest/gtest.h>

#include <vector>

using namespace msc::exec;

namespace {

constexpr uint64_t kWindow = 10'000'000'000;

ResizePolicyConfig config() {
  ResizePolicyConfig c;
  c.targetDensity = 2.0;
  c.deviation = 0.15;
  c.windows = 3;
  c.cooldownNs = 6 * kWindow;
  c.minSlices = 1;
  c.maxSlices = 8;
  return c;
}

// A slice whose density is `factor` x target at `slices` slices when it was sized for `sized`:
// density scales with the slices, as the policy's model (and the sim backend) assume.
struct Workload {
  double intensity = 1.0; // density per slice relative to the sizing point
  unsigned slices = 4;
  int64_t temperatureMc = 50000;
  uint64_t window = 0;
  WindowSample next() {
    WindowSample s;
    s.atNs = ++window * kWindow;
    s.memoryBytes = 10'000'000'000; // 10 GB
    s.tflops = 2.0 * 10 * intensity * slices / 4.0;
    s.temperatureMc = temperatureMc;
    s.slices = slices;
    return s;
  }
};

// Runs `n` windows, applying every acting decision; returns them.
std::vector<ResizeDecision> run(ResizeController &c, Workload &w, int n) {
  std::vector<ResizeDecision> acted;
  for (int i = 0; i < n; ++i) {
    WindowSample s = w.next();
    ResizeDecision d = c.observe(s);
    if (d.acts()) {
      acted.push_back(d);
      w.slices = d.toSlices;
      c.applied(s.atNs);
    }
  }
  return acted;
}

} // namespace

TEST(ResizePolicyTest, OneResizePerDrift) {
  ResizeController c(config());
  Workload w;
  EXPECT_TRUE(run(c, w, 10).empty());
  w.intensity = 0.6; // density falls to 60% of the target
  auto acted = run(c, w, 30);
  ASSERT_EQ(acted.size(), 1u);
  EXPECT_EQ(acted[0].kind, ResizeKind::Grow);
  EXPECT_EQ(acted[0].fromSlices, 4u);
  EXPECT_EQ(acted[0].toSlices, 7u); // 4 / 0.6 = 6.67
  EXPECT_NE(acted[0].reason.find("-40.0% off the target 2.000"), std::string::npos) << acted[0].reason;
  w.intensity = 1.2 * 0.6; // a second drift up by 20% from there
  acted = run(c, w, 30);
  ASSERT_EQ(acted.size(), 1u);
  EXPECT_EQ(acted[0].kind, ResizeKind::Shrink);
  EXPECT_EQ(acted[0].toSlices, 6u); // 7 / 1.2 = 5.83
}

TEST(ResizePolicyTest, TheDeviationMustLastTheConfiguredWindows) {
  ResizeController c(config());
  Workload w;
  w.intensity = 0.5;
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(c.observe(w.next()).kind, ResizeKind::None);
  w.intensity = 1.0; // back inside the band: the count restarts
  EXPECT_EQ(c.observe(w.next()).kind, ResizeKind::None);
  w.intensity = 0.5;
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(c.observe(w.next()).kind, ResizeKind::None);
  EXPECT_EQ(c.observe(w.next()).kind, ResizeKind::Grow);
}

TEST(ResizePolicyTest, NoResizeInsideTheBand) {
  ResizeController c(config());
  Workload w;
  for (double f : {0.86, 1.14, 0.9, 1.1, 0.851, 1.149}) {
    w.intensity = f;
    EXPECT_TRUE(run(c, w, 10).empty()) << f;
  }
}

TEST(ResizePolicyTest, NoScaleUpAtOrAboveTheLimit) {
  ResizeController c(config());
  Workload w;
  w.temperatureMc = 70000;
  w.intensity = 0.5;
  int held = 0;
  for (int i = 0; i < 30; ++i) {
    ResizeDecision d = c.observe(w.next());
    EXPECT_FALSE(d.acts()) << d.reason;
    if (d.kind == ResizeKind::Held) {
      ++held;
      EXPECT_NE(d.reason.find("held back: 70.0 C"), std::string::npos) << d.reason;
    }
  }
  EXPECT_EQ(held, 10); // once every 3 windows, with its reason
  // Hysteresis: 69 C is below the limit but not 2 C below it.
  w.temperatureMc = 69000;
  EXPECT_TRUE(run(c, w, 9).empty());
  w.temperatureMc = 67900;
  auto acted = run(c, w, 3);
  ASSERT_EQ(acted.size(), 1u);
  EXPECT_EQ(acted[0].kind, ResizeKind::Grow);
}

TEST(ResizePolicyTest, ShrinkingIsAllowedWhenHot) {
  ResizeController c(config());
  Workload w;
  w.temperatureMc = 72000;
  w.intensity = 2.0;
  auto acted = run(c, w, 10);
  ASSERT_EQ(acted.size(), 1u);
  EXPECT_EQ(acted[0].toSlices, 2u);
}

TEST(ResizePolicyTest, ShedsOneSliceAtTheThrottleLimitThenCoolsDown) {
  ResizeController c(config());
  Workload w;
  w.temperatureMc = 75000;
  auto acted = run(c, w, 6); // one shed, then the cool-down holds the next
  ASSERT_EQ(acted.size(), 1u);
  EXPECT_EQ(acted[0].kind, ResizeKind::Shed);
  EXPECT_EQ(acted[0].toSlices, 3u);
  acted = run(c, w, 1); // still hot after the cool-down: another slice
  ASSERT_EQ(acted.size(), 1u);
  EXPECT_EQ(acted[0].toSlices, 2u);
}

TEST(ResizePolicyTest, AShedAtTheMinimumIsReportedOncePerHotSpell) {
  ResizePolicyConfig cfg = config();
  ResizeController c(cfg);
  Workload w;
  w.slices = 1;
  w.temperatureMc = 80000;
  int held = 0;
  for (int i = 0; i < 10; ++i)
    held += c.observe(w.next()).kind == ResizeKind::Held;
  EXPECT_EQ(held, 1);
}

TEST(ResizePolicyTest, NoFlappingAroundTheBandEdge) {
  // A density that alternates across the band edge every window never builds a streak.
  ResizeController c(config());
  Workload w;
  std::vector<ResizeDecision> acted;
  for (int i = 0; i < 60; ++i) {
    w.intensity = i % 2 ? 0.8 : 0.9;
    WindowSample s = w.next();
    if (c.observe(s).acts())
      acted.push_back({});
  }
  EXPECT_TRUE(acted.empty());
}

TEST(ResizePolicyTest, BoundsLimitTheResize) {
  ResizePolicyConfig cfg = config();
  cfg.maxSlices = 5;
  ResizeController c(cfg);
  Workload w;
  w.intensity = 0.4; // 4 / 0.4 = 10 slices wanted
  auto acted = run(c, w, 3);
  ASSERT_EQ(acted.size(), 1u);
  EXPECT_EQ(acted[0].toSlices, 5u);
  // At the bound and still low: reported as held, never applied.
  ResizeDecision d;
  for (int i = 0; i < 9; ++i)
    if (ResizeDecision x = c.observe(w.next()); x.kind != ResizeKind::None)
      d = x;
  EXPECT_EQ(d.kind, ResizeKind::Held);
  EXPECT_NE(d.reason.find("outside the bounds 1..5"), std::string::npos) << d.reason;
}

TEST(ResizePolicyTest, NoTargetNoDensityResize) {
  ResizePolicyConfig cfg = config();
  cfg.targetDensity = 0;
  ResizeController c(cfg);
  Workload w;
  w.intensity = 0.2;
  EXPECT_TRUE(run(c, w, 20).empty());
}
