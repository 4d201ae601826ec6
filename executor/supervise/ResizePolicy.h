// The resize policy of one GPU slice entry: when the measured compute density (TFLOP/s per GB of
// slice memory) stays away from the profile's target for `windows` windows in a row, resize so the
// density returns to the target; never grow while the GPU is hot; shed a slice when it throttles.
// Pure: fed one sample per window, it answers a decision and the reason; the monitor acts on it.
//
// Model: achieved TFLOP/s scale with the slice's SMs at the workload's current intensity, so the
// size that brings density d back to target t is slices * t / d (rounded, clamped to the bounds).
// That is why one drift causes exactly one resize: after it, the density is back within the band.
//
// Anti-flap: a density deviation must persist `windows` windows in the same direction; after any
// resize nothing is decided for `cooldown`; the thermal gates latch and release only `hysteresis`
// below their limit.
#pragma once

#include "ir/FieldDefaults.h"

#include <cstdint>
#include <string>

namespace msc::plan {
class ScalingPolicy;
}

namespace msc::exec {

// Initialised with the language's defaults (ir/Fields.def); fromPlan takes the plan's values.
struct ResizePolicyConfig {
  double targetDensity = 0;   // TFLOP/s per GB; 0: density never triggers a resize
  double deviation = double(ir::defaults::scaling::density_deviation) / 1e6; // fraction of the target
  uint32_t windows = uint32_t(ir::defaults::scaling::windows);
  int64_t scaleUpBelowMc = ir::defaults::scaling::scale_up_below;
  int64_t throttleAtMc = ir::defaults::scaling::throttle_at;
  int64_t hysteresisMc = ir::defaults::scaling::hysteresis;
  uint64_t cooldownNs = uint64_t(ir::defaults::scaling::cooldown);
  unsigned minSlices = 1;
  unsigned maxSlices = 1;

  // From the plan; `fullGpuSlices` (the profile's slices per GPU) bounds growth when the plan sets no maximum.
  static ResizePolicyConfig fromPlan(const plan::ScalingPolicy &scaling, unsigned fullGpuSlices);
};

struct WindowSample {
  uint64_t atNs = 0;
  double tflops = 0;
  uint64_t memoryBytes = 0;
  double utilisation = 0;
  int64_t temperatureMc = 0;
  unsigned slices = 0;        // the slice entry's current size
};

enum class ResizeKind {
  None,   // nothing to do (or a deviation still building up)
  Held,   // a grow was due but the GPU is too hot: logged, not applied
  Grow,
  Shrink,
  Shed,   // thermal: one slice fewer
};

struct ResizeDecision {
  ResizeKind kind = ResizeKind::None;
  unsigned fromSlices = 0, toSlices = 0;
  double density = 0;          // measured, TFLOP/s per GB (0 when unknown)
  double deviation = 0;        // (density - target) / target
  int64_t temperatureMc = 0;
  std::string reason;          // one line with the numbers behind the decision
  bool acts() const { return kind == ResizeKind::Grow || kind == ResizeKind::Shrink || kind == ResizeKind::Shed; }
};

const char *resizeKindName(ResizeKind kind);

class ResizeController {
public:
  explicit ResizeController(ResizePolicyConfig config) : config_(config) {}

  ResizeDecision observe(const WindowSample &sample);
  // The decision was applied at `atNs`: the cool-down starts and the deviation count restarts.
  void applied(uint64_t atNs);
  // A resize was asked for by hand: also starts the cool-down.
  void manual(uint64_t atNs) { applied(atNs); }

  const ResizePolicyConfig &config() const { return config_; }

private:
  bool coolingDown(uint64_t now) const { return hasResized_ && now - lastResizeNs_ < config_.cooldownNs; }
  ResizeDecision densityDecision(const WindowSample &s, ResizeDecision d);

  ResizePolicyConfig config_;
  int streakSign_ = 0;       // +1 above the band, -1 below, 0 inside
  uint32_t streak_ = 0;
  bool hot_ = false;         // at/above scale-up limit, until below it minus hysteresis
  bool shedHeldReported_ = false; // a shed at the minimum is reported once per hot spell
  bool hasResized_ = false;
  uint64_t lastResizeNs_ = 0;
};

} // namespace msc::exec
