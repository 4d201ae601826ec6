// cpu-numa: every CPU a role lists exists, is online, is not isolated, sits on the role's NUMA
// node, is not an SMT sibling of another role's CPU, and is near the GPU the role feeds.
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <map>
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
    const hal::Topology &topo = *ctx.topology;
    std::map<unsigned, const ir::Role *> coreOwner; // first PU of a core -> the role holding it
    for (const ir::Role &role : ctx.contract.body.roles) {
      const ir::RoleFields &f = role.fields;
      if (f.numa_node && topo.numaVertex(static_cast<unsigned>(f.numa_node->value)) == hal::NoVertex) {
        std::vector<unsigned> nodes = topo.numaNodes();
        ctx.diags.report(DiagCode::ERR_HAL_NUMA_001, at(f.numa_node->origin))
                .note(Location::none(), "this node has NUMA node(s) " + joinNumbers(nodes))
            << f.numa_node->value;
      }
      if (!f.cpu_cores)
        continue;
      checkCpus(ctx, role, coreOwner);
    }
    checkDistanceToGpu(ctx);
  }

private:
  void checkCpus(PassContext &ctx, const ir::Role &role, std::map<unsigned, const ir::Role *> &coreOwner) {
    const hal::Topology &topo = *ctx.topology;
    const auto &cpus = *role.fields.cpu_cores;
    std::optional<unsigned> declaredNode;
    if (role.fields.numa_node && topo.numaVertex(static_cast<unsigned>(role.fields.numa_node->value)) != hal::NoVertex)
      declaredNode = static_cast<unsigned>(role.fields.numa_node->value);
    std::map<unsigned, std::vector<unsigned>> cpusByCore;
    for (uint32_t cpu : cpus.value) {
      if (!topo.hasPu(cpu)) {
        ctx.diags.report(DiagCode::ERR_HAL_CPU_001, at(cpus.origin))
                .note(Location::none(), "this node has CPUs " + hal::formatCpuList(topo.pus()))
            << cpu;
        continue;
      }
      if (!topo.isPuOnline(cpu)) {
        ctx.diags.report(DiagCode::ERR_HAL_CPU_002, at(cpus.origin)) << cpu;
        continue;
      }
      const char *isolatedBy = nullptr;
      if (llvm::is_contained(topo.isolatedCpus(), cpu))
        isolatedBy = "isolcpus=";
      else if (llvm::is_contained(topo.nohzFullCpus(), cpu))
        isolatedBy = "nohz_full=";
      if (isolatedBy) {
        ctx.diags.report(DiagCode::ERR_HAL_CPU_003, at(cpus.origin))
                .note(Location::none(), "kernel command line: " + topo.kernelCmdline())
                .note(Location::none(), "the scheduler does not balance onto isolated CPUs; pick CPUs outside " +
                                            hal::formatCpuList(topo.isolatedCpus().empty() ? topo.nohzFullCpus()
                                                                                           : topo.isolatedCpus()))
            << cpu << role.name << isolatedBy;
      }
      std::optional<unsigned> node = topo.numaNodeOfPu(cpu);
      if (declaredNode && node && *node != *declaredNode) {
        ctx.diags.report(DiagCode::ERR_HAL_CPU_006, at(cpus.origin))
                .note(at(role.fields.numa_node->origin), "numa_node declared here")
                .note(Location::none(), "CPUs of NUMA node " + std::to_string(*declaredNode) + ": " +
                                            hal::formatCpuList(topo.cpusOfNumaNode(*declaredNode)))
            << cpu << role.name << *node << *declaredNode;
      }
      cpusByCore[firstPuOfCore(topo, cpu)].push_back(cpu);
    }

    std::vector<std::string> siblingGroups;
    for (const auto &[core, members] : cpusByCore) {
      if (members.size() > 1)
        siblingGroups.push_back("CPUs " + joinNumbers(members) + " are SMT siblings of one core");
      auto [it, inserted] = coreOwner.emplace(core, &role);
      if (inserted || it->second == &role)
        continue;
      const ir::Role &other = *it->second;
      std::vector<unsigned> siblings = topo.smtSiblings(members.front());
      ctx.diags.report(DiagCode::ERR_HAL_CPU_004, at(cpus.origin))
              .note(at(other.fields.cpu_cores->origin), "role '" + other.name + "' holds CPU(s) of the same core here")
              .note(Location::none(), "physical core " + std::to_string(core) + " runs CPUs " +
                                          joinNumbers(siblings) + "; role '" + role.name +
                                          "' would get half of a core that role '" + other.name + "' also uses")
          << other.name << role.name << core;
    }
    if (!siblingGroups.empty()) {
      DiagBuilder d = ctx.diags.report(DiagCode::WRN_HAL_CPU_005, at(cpus.origin));
      d << role.name << static_cast<uint64_t>(cpus.value.size()) << static_cast<uint64_t>(cpusByCore.size());
      for (const std::string &group : siblingGroups)
        d.note(Location::none(), group);
      d.note(Location::none(), "role '" + role.name + "' loses " +
                                   std::to_string(cpus.value.size() - cpusByCore.size()) +
                                   " core(s) of compute it may expect; list one CPU per core to make it explicit");
    }
  }

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
                                          hal::formatCpuList(topo.cpusOfNumaNode(*gpu->numaNode)))
          << role.name << *nodes.begin() << gpu->pci.str() << *gpu->numaNode;
    }
  }
};

} // namespace

std::unique_ptr<Pass> createCpuNumaPass() { return std::make_unique<CpuNumaPass>(); }

} // namespace msc::passes
