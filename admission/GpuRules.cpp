// GPU rules: the GPU is there, and the slices and memory the roles claim fit what it offers.
#include "admission/GpuArch.h"
#include "admission/Rules.h"
#include "support/Units.h"

#include <llvm/Support/MathExtras.h>

#include <map>

namespace msc::admission {

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

// What the roles of one contract claim of one GPU together.
struct GpuUse {
  const hal::GpuInfo *info = nullptr;
  const GpuClaim *first = nullptr;
  unsigned slices = 0;
  uint64_t memory = 0;
};

void checkUse(const PciAddress &pci, const GpuUse &use, const RuleContext &ctx) {
  const hal::GpuInfo &info = *use.info;
  const GpuClaim &first = *use.first;
  Location where = ctx.at(first.at);
  unsigned division = std::max(1u, first.division);
  if (use.slices > division) {
    DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_GPU_002, where);
    d << use.slices << pci.str() << division;
    if (first.divisionAt.hasRange())
      d.note(first.divisionAt, "gpu_sm_slices set here (" + first.divisionSetBy + ")");
  }
  unsigned granularity = smPartitioning(info.ccMajor, info.ccMinor).minSms;
  if (!info.smCount) {
    ctx.diags.report(DiagCode::WRN_HAL_GPU_006, where) << "SM count" << pci.str() << "SM slices";
  } else if (granularity && info.smCount / division < granularity) {
    ctx.diags.report(DiagCode::ERR_HAL_GPU_003, where)
            .note(Location::none(), "green contexts on this architecture need at least " + std::to_string(granularity) +
                                        " SMs per partition")
        << pci.str() << info.smCount << division << granularity;
  }
  if (!use.memory)
    return;
  if (!info.memoryBytes)
    ctx.diags.report(DiagCode::WRN_HAL_GPU_006, where) << "memory size" << pci.str() << "memory requests";
  else if (use.memory > info.memoryBytes)
    ctx.diags.report(DiagCode::ERR_HAL_GPU_004, where)
        << formatBytes({use.memory}) << pci.str() << formatBytes({info.memoryBytes});
}

} // namespace

void checkGpus(const Claims &claims, const RuleContext &ctx) {
  const hal::Topology &topo = ctx.topology;
  std::map<PciAddress, GpuUse> uses;
  for (const RoleClaims &role : claims.roles) {
    if (!role.gpu)
      continue;
    const GpuClaim &gpu = *role.gpu;
    std::optional<hal::GpuRef> ref = gpu.found ? topo.gpuByPci(gpu.pci) : std::nullopt;
    if (!ref) {
      ctx.diags.report(DiagCode::ERR_HAL_GPU_001, ctx.at(gpu.at)).note(Location::none(), describeGpus(topo))
          << (gpu.written.empty() ? gpu.pci.str() : gpu.written);
      continue;
    }
    unsigned smCount = ref->info->smCount;
    if (smCount && gpu.sms > smCount) {
      // A slice from a plan compiled for a GPU with more SMs than this one has now.
      unsigned slices = std::max(1u, gpu.slices);
      ctx.diags.report(DiagCode::ERR_HAL_GPU_003, ctx.at(gpu.at)) << gpu.pci.str() << smCount << slices
                                                                  << gpu.sms / slices;
    }
    GpuUse &use = uses[gpu.pci];
    if (!use.first) {
      use.info = ref->info;
      use.first = &gpu;
      use.memory = gpuMemoryOf(claims, gpu.pci);
    }
    use.slices = llvm::SaturatingAdd(use.slices, gpu.slices);
  }
  for (const auto &[pci, use] : uses)
    checkUse(pci, use, ctx);
}

uint64_t gpuMemoryOf(const Claims &claims, const PciAddress &gpu) {
  uint64_t own = 0, perGpu = 0;
  for (const RoleClaims &role : claims.roles) {
    if (!role.gpu || !role.gpu->found || role.gpu->pci != gpu)
      continue;
    if (role.gpu->memoryPerGpu)
      perGpu = std::max(perGpu, role.gpu->memoryBytes);
    else
      own = llvm::SaturatingAdd(own, role.gpu->memoryBytes);
  }
  return own ? own : perGpu;
}

} // namespace msc::admission
