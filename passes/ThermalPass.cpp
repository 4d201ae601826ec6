// thermal: a GPU already at or above the contract's throttle limit cannot take a scale-up.
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include <set>

namespace msc::passes {

namespace {

constexpr int64_t kDefaultThrottleMilliC = 75000; // the scaling section's documented default

class ThermalPass : public Pass {
public:
  llvm::StringRef name() const override { return "thermal"; }
  llvm::StringRef summary() const override { return "no GPU the contract uses is at or above its throttle limit"; }

  void run(PassContext &ctx) override {
    const hal::Topology &topo = *ctx.topology;
    const auto &throttle = ctx.contract.body.scaling.throttle_at;
    int64_t limit = throttle ? throttle->value.value : kDefaultThrottleMilliC;
    std::set<PciAddress> seen;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r || !r->gpu || !seen.insert(r->gpu->pci).second)
        continue;
      auto gpu = topo.gpuByPci(r->gpu->pci);
      if (!gpu || !gpu->info->temperatureMilliC || *gpu->info->temperatureMilliC < limit)
        continue;
      DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_THERM_002, at(role.fields.gpu->origin));
      d << r->gpu->pci.str() << ir::formatTemperature({*gpu->info->temperatureMilliC})
        << ir::formatTemperature({limit});
      if (throttle)
        d.note(at(throttle->origin), "throttle_at set here (" + throttle->origin.declaration + ")");
      d.note(Location::none(), "nvidia-smi --query-gpu=temperature.gpu --format=csv shows the temperature");
    }
  }
};

} // namespace

std::unique_ptr<Pass> createThermalPass() { return std::make_unique<ThermalPass>(); }

} // namespace msc::passes
