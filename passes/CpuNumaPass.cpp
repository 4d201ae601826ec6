// cpu-numa: every CPU a role lists exists, is online, is not isolated, sits on the role's NUMA
// node, is not an SMT sibling of another role's CPU (admission/CpuRules.cpp), and is near the GPU
// the role feeds.
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"
#include "support/CpuList.h"

#include <set>

namespace msc::passes {

namespace {

class CpuNumaPass : public Pass {
public:
  llvm::StringRef name() const override { return "cpu-numa"; }
  llvm::StringRef summary() const override {
    return "role CPUs exist, are schedulable, sit on the declared NUMA node and share no physical core";
  }

  void run(PassContext &ctx) override {
    admission::checkCpus(ctx.claims, ctx.rules());
    checkDistanceToGpu(ctx);
  }

private:
  // A contract-quality warning, not a resource rule: the node could honour it, slowly.
  void checkDistanceToGpu(PassContext &ctx) {
    const hal::Topology &topo = *ctx.topology;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r || r->cpus.empty() || r->gpu || !role.fields.cpu_cores)
        continue;
      const GpuPlacement *gpu = fedGpu(ctx.placement, *r);
      if (!gpu || !gpu->numaNode)
        continue;
      std::set<unsigned> nodes;
      for (unsigned cpu : r->cpus)
        if (auto node = topo.numaNodeOfPu(cpu))
          nodes.insert(*node);
      if (nodes.size() != 1 || *nodes.begin() == *gpu->numaNode)
        continue;
      ctx.diags.report(DiagCode::WRN_HAL_CPU_007, at(role.fields.cpu_cores->origin))
              .note(Location::none(), "CPUs local to GPU " + gpu->pci.str() + ": " +
                                          formatCpuList(topo.cpusOfNumaNode(*gpu->numaNode)))
          << role.name << *nodes.begin() << gpu->pci.str() << *gpu->numaNode;
    }
  }
};

} // namespace

std::unique_ptr<Pass> createCpuNumaPass() { return std::make_unique<CpuNumaPass>(); }

} // namespace msc::passes
