// CPU and NUMA rules: what the scheduler can give each role, and that no two roles split a core.
#include "admission/Rules.h"

#include "support/CpuList.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <map>
#include <set>

namespace msc::admission {

namespace {

void checkNumaNode(const RoleClaims &role, const RuleContext &ctx) {
  const hal::Topology &topo = ctx.topology;
  if (!role.numaNode || topo.numaVertex(*role.numaNode) != hal::NoVertex)
    return;
  ctx.diags.report(DiagCode::ERR_HAL_NUMA_001, ctx.at(role.numaAt))
          .note(Location::none(), "this node has NUMA node(s) " + joinNumbers(topo.numaNodes()))
      << *role.numaNode;
}

// CPUs of a role that are not on its declared NUMA node: one ERR_HAL_CPU_006 for all of them (a
// range written on the wrong node is one mistake), with a fix-it to as many CPUs of the right node.
void reportOffNode(const RoleClaims &role, const std::vector<unsigned> &offNode, const std::set<unsigned> &onNodes,
                   unsigned declared, const RuleContext &ctx) {
  const hal::Topology &topo = ctx.topology;
  bool one = offNode.size() == 1;
  std::vector<unsigned> nodes(onNodes.begin(), onNodes.end());
  DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_CPU_006, ctx.at(role.cpusAt));
  d << (one ? "CPU " : "CPUs ") + formatCpuList(offNode) << role.role
    << std::string(one ? "is" : "are") + " on NUMA node" + (nodes.size() > 1 ? "s " : " ") + joinNumbers(nodes)
    << declared;
  if (role.numaAt.hasRange())
    d.note(role.numaAt, "numa_node declared here");
  // Whole cores first (the first CPU of each), then their siblings, so the fix-it splits no core
  // that it need not.
  std::vector<unsigned> usable, siblings;
  for (unsigned cpu : topo.cpusOfNumaNode(declared))
    if (topo.isPuOnline(cpu) && !llvm::is_contained(topo.isolatedCpus(), cpu) &&
        !llvm::is_contained(topo.nohzFullCpus(), cpu))
      (topo.firstPuOfCore(cpu) == cpu ? usable : siblings).push_back(cpu);
  usable.insert(usable.end(), siblings.begin(), siblings.end());
  d.note(Location::none(), "CPUs of NUMA node " + std::to_string(declared) + ": " +
                               formatCpuList(topo.cpusOfNumaNode(declared)));
  if (usable.size() < role.cpus.size()) {
    d.note(Location::none(), "NUMA node " + std::to_string(declared) + " has " + std::to_string(usable.size()) +
                                 " usable CPU(s), the role asks for " + std::to_string(role.cpus.size()));
    return;
  }
  usable.resize(role.cpus.size());
  std::sort(usable.begin(), usable.end());
  std::string list = "[" + llvm::join(llvm::map_range(usable, [](unsigned c) { return std::to_string(c); }), ", ") + "]";
  std::string message = "use " + std::to_string(usable.size()) + " CPU(s) of NUMA node " + std::to_string(declared) +
                        ": cpu_cores = " + list;
  if (ctx.at(role.cpusAt).hasRange())
    d.noteWithFixIt(ctx.at(role.cpusAt), message, {ctx.at(role.cpusAt).range, list});
  else
    d.note(Location::none(), message);
}

// Checks each CPU of `role` alone; returns the role's CPUs grouped by physical core.
std::map<unsigned, std::vector<unsigned>> checkEachCpu(const RoleClaims &role, const RuleContext &ctx) {
  const hal::Topology &topo = ctx.topology;
  Location where = ctx.at(role.cpusAt);
  // The node the CPUs must be on; one that does not exist is reported by checkNumaNode alone.
  bool bound = role.numaNode && topo.numaVertex(*role.numaNode) != hal::NoVertex;
  unsigned declared = bound ? *role.numaNode : 0;
  std::map<unsigned, std::vector<unsigned>> byCore;
  std::vector<unsigned> offNode; // on another NUMA node than the declared one
  std::set<unsigned> offNodes;
  for (unsigned cpu : role.cpus) {
    if (!topo.hasPu(cpu)) {
      ctx.diags.report(DiagCode::ERR_HAL_CPU_001, where)
              .note(Location::none(), "this node has CPUs " + formatCpuList(topo.pus()))
          << cpu;
      continue;
    }
    if (!topo.isPuOnline(cpu)) {
      ctx.diags.report(DiagCode::ERR_HAL_CPU_002, where)
              .note(Location::none(), "echo 1 > /sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                                          "/online brings it back")
          << cpu;
      continue;
    }
    const char *isolatedBy = llvm::is_contained(topo.isolatedCpus(), cpu)   ? "isolcpus="
                             : llvm::is_contained(topo.nohzFullCpus(), cpu) ? "nohz_full="
                                                                            : nullptr;
    if (isolatedBy)
      ctx.diags.report(DiagCode::ERR_HAL_CPU_003, where)
              .note(Location::none(), "kernel command line: " + topo.kernelCmdline())
              .note(Location::none(), "the scheduler does not balance onto isolated CPUs; pick CPUs outside " +
                                          formatCpuList(topo.isolatedCpus().empty() ? topo.nohzFullCpus()
                                                                                    : topo.isolatedCpus()))
          << cpu << role.role << isolatedBy;
    std::optional<unsigned> node = topo.numaNodeOfPu(cpu);
    if (bound && node && *node != declared) {
      offNode.push_back(cpu);
      offNodes.insert(*node);
    }
    byCore[topo.firstPuOfCore(cpu)].push_back(cpu);
  }
  if (!offNode.empty())
    reportOffNode(role, offNode, offNodes, declared, ctx);
  return byCore;
}

void warnSiblings(const RoleClaims &role, const std::map<unsigned, std::vector<unsigned>> &byCore,
                  const RuleContext &ctx) {
  std::vector<std::string> groups;
  for (const auto &[core, members] : byCore)
    if (members.size() > 1)
      groups.push_back("CPUs " + joinNumbers(members) + " are SMT siblings of one core");
  if (groups.empty())
    return;
  DiagBuilder d = ctx.diags.report(DiagCode::WRN_HAL_CPU_005, ctx.at(role.cpusAt));
  d << role.role << static_cast<uint64_t>(role.cpus.size()) << static_cast<uint64_t>(byCore.size());
  for (const std::string &group : groups)
    d.note(Location::none(), group);
  d.note(Location::none(), "role '" + role.role + "' loses " + std::to_string(role.cpus.size() - byCore.size()) +
                               " core(s) of compute it may expect; list one CPU per core to make it explicit");
}

} // namespace

void checkCpus(const Claims &claims, const RuleContext &ctx) {
  std::map<unsigned, const RoleClaims *> coreOwner; // first PU of a core -> the role holding it
  for (const RoleClaims &role : claims.roles) {
    checkNumaNode(role, ctx);
    if (role.cpus.empty())
      continue;
    std::map<unsigned, std::vector<unsigned>> byCore = checkEachCpu(role, ctx);
    for (const auto &[core, members] : byCore) {
      auto [it, inserted] = coreOwner.emplace(core, &role);
      if (inserted || it->second == &role)
        continue;
      const RoleClaims &other = *it->second;
      DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_CPU_004, ctx.at(role.cpusAt));
      if (other.cpusAt.hasRange())
        d.note(other.cpusAt, "role '" + other.role + "' holds CPU(s) of the same core here");
      d.note(Location::none(), "physical core " + std::to_string(core) + " runs CPUs " +
                                   joinNumbers(ctx.topology.smtSiblings(members.front())) + "; role '" + role.role +
                                   "' would get half of a core that role '" + other.role + "' also uses");
      d << other.role << role.role << core;
    }
    warnSiblings(role, byCore, ctx);
  }
}

} // namespace msc::admission
