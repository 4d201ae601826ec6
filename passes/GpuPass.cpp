// gpu: every GPU a role names exists, its SM slices fit the SM count and the architecture's
// green-context granularity, memory requests fit (admission/GpuRules.cpp), and the precisions
// asked for exist.
#include "admission/GpuArch.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <set>

namespace msc::passes {

namespace {

class GpuPass : public Pass {
public:
  llvm::StringRef name() const override { return "gpu"; }
  llvm::StringRef summary() const override {
    return "GPUs exist; SM slices, memory and precisions fit what each GPU offers";
  }

  void run(PassContext &ctx) override {
    admission::checkGpus(ctx.claims, ctx.rules());
    // Precisions are a property of the contract's code, not a claim on the node: a plan does
    // not carry them, so this check is the compiler's alone.
    std::set<PciAddress> seen;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (role.fields.gpu && r && r->gpu && seen.insert(r->gpu->pci).second)
        checkPrecision(ctx, *r->gpu, at(role.fields.gpu->origin));
    }
  }

private:
  void checkPrecision(PassContext &ctx, const GpuPlacement &gpu, const Location &where) {
    const auto &precision = ctx.contract.body.compute.precision;
    if (!precision)
      return;
    std::optional<hal::GpuRef> ref = ctx.topology->gpuByPci(gpu.pci);
    if (!ref)
      return;
    int major = ref->info->ccMajor, minor = ref->info->ccMinor;
    if (major < 0) {
      ctx.diags.report(DiagCode::WRN_HAL_GPU_006, where) << "compute capability" << gpu.pci.str() << "precision";
      return;
    }
    unsigned cc = static_cast<unsigned>(major * 10 + std::max(minor, 0));
    for (const std::string &p : precision->value) {
      unsigned needed = admission::minCapabilityFor(p);
      if (needed && cc < needed) {
        std::string what = gpu.model.empty() ? "" : gpu.model + ", ";
        ctx.diags.report(DiagCode::ERR_HAL_GPU_005, at(precision->origin))
                .note(Location::none(), p + " needs compute capability " + std::to_string(needed / 10) + "." +
                                            std::to_string(needed % 10) + " or newer")
            << gpu.pci.str() << (what + "compute capability " + std::to_string(major) + "." + std::to_string(minor))
            << p;
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> createGpuPass() { return std::make_unique<GpuPass>(); }

} // namespace msc::passes
