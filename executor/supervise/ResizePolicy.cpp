#include "executor/supervise/ResizePolicy.h"

#include "plan/plan.pb.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace msc::exec {

const char *resizeKindName(ResizeKind kind) {
  switch (kind) {
  case ResizeKind::None: return "none";
  case ResizeKind::Held: return "held";
  case ResizeKind::Grow: return "grow";
  case ResizeKind::Shrink: return "shrink";
  case ResizeKind::Shed: return "shed";
  }
  return "?";
}

ResizePolicyConfig ResizePolicyConfig::fromPlan(const plan::ScalingPolicy &s, unsigned fullGpuSlices) {
  ResizePolicyConfig c;
  c.targetDensity = s.target_density();
  c.deviation = s.deviation_ppm() / 1e6;
  c.windows = std::max(1u, s.windows());
  c.scaleUpBelowMc = s.scale_up_below_mc();
  c.throttleAtMc = s.throttle_at_mc();
  c.hysteresisMc = std::max<int64_t>(0, s.hysteresis_mc());
  c.cooldownNs = s.cooldown_ns();
  c.minSlices = std::max(1u, s.min_sm_slices());
  c.maxSlices = s.max_sm_slices() ? s.max_sm_slices() : std::max(1u, fullGpuSlices);
  c.maxSlices = std::max(c.maxSlices, c.minSlices);
  return c;
}

namespace {
std::string format(const char *fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}
double celsius(int64_t mc) { return double(mc) / 1000.0; }
} // namespace

ResizeDecision ResizeController::observe(const WindowSample &s) {
  ResizeDecision d;
  d.fromSlices = d.toSlices = s.slices;
  d.temperatureMc = s.temperatureMc;
  if (s.memoryBytes > 0)
    d.density = s.tflops / (double(s.memoryBytes) / 1e9);
  if (config_.targetDensity > 0 && d.density > 0)
    d.deviation = (d.density - config_.targetDensity) / config_.targetDensity;

  // The scale-up gate latches at the limit and releases only `hysteresis` below it.
  if (s.temperatureMc >= config_.scaleUpBelowMc)
    hot_ = true;
  else if (s.temperatureMc < config_.scaleUpBelowMc - config_.hysteresisMc)
    hot_ = false;

  if (coolingDown(s.atNs)) {
    streak_ = 0, streakSign_ = 0; // windows inside the cool-down still show the old size
    return d;
  }
  if (s.temperatureMc < config_.throttleAtMc - config_.hysteresisMc)
    shedHeldReported_ = false;
  if (s.temperatureMc >= config_.throttleAtMc) {
    streak_ = 0, streakSign_ = 0;
    if (s.slices <= config_.minSlices) {
      if (shedHeldReported_)
        return d;
      shedHeldReported_ = true;
      d.reason = format("%.1f C is at or above the throttle limit %.1f C, but the slice is at its minimum of %u",
                        celsius(s.temperatureMc), celsius(config_.throttleAtMc), config_.minSlices);
      d.kind = ResizeKind::Held;
      return d;
    }
    d.kind = ResizeKind::Shed;
    d.toSlices = s.slices - 1;
    d.reason = format("%.1f C is at or above the throttle limit %.1f C: shed one slice",
                      celsius(s.temperatureMc), celsius(config_.throttleAtMc));
    return d;
  }
  return densityDecision(s, d);
}

ResizeDecision ResizeController::densityDecision(const WindowSample &s, ResizeDecision d) {
  if (config_.targetDensity <= 0 || d.density <= 0 || s.slices == 0)
    return d;
  int sign = d.deviation > config_.deviation ? 1 : d.deviation < -config_.deviation ? -1 : 0;
  if (sign == 0 || sign != streakSign_)
    streak_ = 0;
  streakSign_ = sign;
  if (sign == 0 || ++streak_ < config_.windows)
    return d;
  streak_ = 0;
  std::string numbers = format("density %.3f TFLOP/s/GB is %+.1f%% off the target %.3f (band %.1f%%) for %u windows",
                               d.density, d.deviation * 100, config_.targetDensity, config_.deviation * 100,
                               config_.windows);
  double exact = double(s.slices) * config_.targetDensity / d.density;
  long wanted = std::lround(exact);
  unsigned to = static_cast<unsigned>(std::clamp<long>(wanted, config_.minSlices, config_.maxSlices));
  if (to == s.slices) {
    d.kind = ResizeKind::Held;
    d.reason = numbers + format(wanted == long(to) ? "; %.2f slices would fit, no whole-slice change is closer"
                                                   : "; %.2f slices would fit, outside the bounds %u..%u",
                                exact, config_.minSlices, config_.maxSlices);
    return d;
  }
  if (to > s.slices && hot_) {
    d.kind = ResizeKind::Held;
    d.reason = numbers + format("; growing to %u slices is held back: %.1f C (no scale-up at or above %.1f C "
                                "until below %.1f C)",
                                to, celsius(s.temperatureMc), celsius(config_.scaleUpBelowMc),
                                celsius(config_.scaleUpBelowMc - config_.hysteresisMc));
    return d;
  }
  d.kind = to > s.slices ? ResizeKind::Grow : ResizeKind::Shrink;
  d.toSlices = to;
  d.reason = numbers + format("; %u -> %u slices brings it to %.3f", s.slices, to, d.density * to / s.slices);
  return d;
}

void ResizeController::applied(uint64_t atNs) {
  hasResized_ = true;
  lastResizeNs_ = atNs;
  streak_ = 0, streakSign_ = 0;
}

} // namespace msc::exec
