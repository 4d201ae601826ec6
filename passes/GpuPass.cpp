// gpu: every GPU a role names exists, its SM slices fit the SM count and the architecture's
// green-context granularity, memory requests fit, and the precisions asked for exist.
#include "ir/ValueFormat.h"
#include "passes/GpuArch.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <map>

namespace msc::passes {

namespace {

std::string describeGpus(const hal::Topology &topo) {
  if (topo.gpus().empty())
    return "this node has no GPU";
  std::string out = "this node has " + std::to_string(topo.gpus().size()) + " GPU(s):";
  for (const hal::GpuRef &gpu : topo.gpus()) {
    out += " " + std::to_string(gpu.index) + " (" + gpu.info->pci.str();
    if (!gpu.info->model.empty())
      out += " " + gpu.info->model;
    out += ")";
  }
  return out;
}

class GpuPass : public Pass {
public:
  llvm::StringRef name() const override { return "gpu"; }
  llvm::StringRef summary() const override {
    return "GPUs exist; SM slices, memory and precisions fit what each GPU offers";
  }

  void run(PassContext &ctx) override {
    const hal::Topology &topo = *ctx.topology;
    const ir::ComputeFields &compute = ctx.contract.body.compute;
    struct Use {
      const GpuPlacement *gpu;
      std::vector<const ir::Role *> roles;
      unsigned slices = 0;
      uint64_t memory = 0;
    };
    std::map<PciAddress, Use> uses;
    for (const ir::Role &role : ctx.contract.body.roles) {
      if (!role.fields.gpu)
        continue;
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r || !r->gpu) {
        ctx.diags.report(DiagCode::ERR_HAL_GPU_001, at(role.fields.gpu->origin))
                .note(Location::none(), describeGpus(topo))
            << ir::formatValue(role.fields.gpu->value);
        continue;
      }
      Use &use = uses[r->gpu->pci];
      use.gpu = &*r->gpu;
      use.roles.push_back(&role);
      use.slices += r->smSlices;
      if (role.fields.gpu_memory)
        use.memory += role.fields.gpu_memory->value.value;
    }

    for (auto &[pci, use] : uses) {
      const GpuPlacement &gpu = *use.gpu;
      const ir::Role &first = *use.roles.front();
      Location where = at(first.fields.gpu->origin);
      unsigned division = compute.gpu_sm_slices ? static_cast<unsigned>(compute.gpu_sm_slices->value) : 1;
      if (division == 0)
        division = 1;
      if (use.slices > division) {
        DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_GPU_002, where);
        d << use.slices << pci.str() << division;
        if (compute.gpu_sm_slices)
          d.note(at(compute.gpu_sm_slices->origin),
                 "gpu_sm_slices set here (" + compute.gpu_sm_slices->origin.declaration + ")");
      }
      if (!gpu.smCount) {
        ctx.diags.report(DiagCode::WRN_HAL_GPU_006, where) << "SM count" << pci.str() << "SM slices";
      } else if (gpu.smGranularity && gpu.smCount / division < gpu.smGranularity) {
        ctx.diags.report(DiagCode::ERR_HAL_GPU_003, where)
                .note(Location::none(), "green contexts on this architecture need at least " +
                                            std::to_string(gpu.smGranularity) + " SMs per partition")
            << pci.str() << gpu.smCount << division << gpu.smGranularity;
      }
      uint64_t memory = use.memory ? use.memory : (compute.gpu_memory ? compute.gpu_memory->value.value : 0);
      if (memory) {
        if (!gpu.memoryBytes)
          ctx.diags.report(DiagCode::WRN_HAL_GPU_006, where) << "memory size" << pci.str() << "memory requests";
        else if (memory > gpu.memoryBytes)
          ctx.diags.report(DiagCode::ERR_HAL_GPU_004, where)
              << ir::formatBytes({memory}) << pci.str() << ir::formatBytes({gpu.memoryBytes});
      }
      checkPrecision(ctx, gpu, where);
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
      unsigned needed = minCapabilityFor(p);
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
