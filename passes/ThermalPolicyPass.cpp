// thermal-policy: the scaling thresholds make sense together (no topology needed).
#include "passes/PassUtil.h"
#include "passes/Passes.h"

namespace msc::passes {

namespace {

class ThermalPolicyPass : public Pass {
public:
  llvm::StringRef name() const override { return "thermal-policy"; }
  llvm::StringRef summary() const override { return "the scaling thresholds make sense together"; }
  bool needsTopology() const override { return false; }

  void run(PassContext &ctx) override {
    const ir::ScalingFields &s = ctx.contract.body.scaling;
    if (s.scale_up_below && s.throttle_at && s.scale_up_below->value >= s.throttle_at->value)
      ctx.diags.report(DiagCode::ERR_HAL_THERM_001, at(s.scale_up_below->origin))
              .note(at(s.throttle_at->origin), "throttle_at set here (" + s.throttle_at->origin.declaration + ")")
          << ir::formatTemperature(s.scale_up_below->value) << ir::formatTemperature(s.throttle_at->value);
    if (s.min_sm_slices && s.max_sm_slices && s.min_sm_slices->value > s.max_sm_slices->value)
      ctx.diags.report(DiagCode::ERR_SEM_009, at(s.min_sm_slices->origin))
          << s.min_sm_slices->value << "min_sm_slices"
          << ("at most max_sm_slices = " + std::to_string(s.max_sm_slices->value));
  }
};

} // namespace

std::unique_ptr<Pass> createThermalPolicyPass() { return std::make_unique<ThermalPolicyPass>(); }

} // namespace msc::passes
