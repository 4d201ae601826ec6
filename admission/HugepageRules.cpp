// Hugepage rules: the page size exists and the pool's NUMA node has the pages free, or the
// shortfall becomes a planned reservation.
#include "admission/Rules.h"
#include "support/Quantity.h"
#include "support/Units.h"

#include <set>

namespace msc::admission {

namespace {

std::set<uint64_t> pageSizesOf(const hal::Topology &topo) {
  std::set<uint64_t> sizes;
  for (unsigned node : topo.numaNodes())
    if (const hal::NumaInfo *info = topo.numaInfo(node))
      for (const hal::HugepagePool &pool : info->hugepages)
        sizes.insert(pool.pageSize);
  return sizes;
}

std::string freePagesFile(unsigned node, uint64_t pageSize) {
  return "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/hugepages-" +
         std::to_string(pageSize / 1024) + "kB/free_hugepages";
}

} // namespace

std::optional<unsigned> poolNode(const hal::Topology &topo, const HugepageClaim &pool) {
  if (pool.numaNode)
    return pool.numaNode;
  std::vector<unsigned> nodes = topo.numaNodes();
  return nodes.size() == 1 ? std::optional<unsigned>(nodes.front()) : std::nullopt;
}

std::vector<HugepageReservation> checkHugepages(const Claims &claims, const RuleContext &ctx) {
  const hal::Topology &topo = ctx.topology;
  std::set<uint64_t> sizes = pageSizesOf(topo);
  std::vector<HugepageReservation> reservations;
  for (const RoleClaims &role : claims.roles) {
    if (!role.hugepages)
      continue;
    const HugepageClaim &pool = *role.hugepages;
    Location where = ctx.at(pool.at);
    std::string pageSize = formatBytes({pool.pageSize});
    if (!sizes.empty() && !sizes.count(pool.pageSize)) {
      std::string supported;
      for (uint64_t s : sizes)
        supported += (supported.empty() ? "" : ", ") + formatBytes({s});
      ctx.diags.report(DiagCode::ERR_HAL_HUGE_001, where)
              .note(Location::none(), "hugepage sizes of this node: " + supported + " (ls /sys/kernel/mm/hugepages)")
          << pageSize;
      continue;
    }
    std::optional<unsigned> node = poolNode(topo, pool);
    if (!node)
      continue; // nothing says where the pool lives; the CPU and RDMA rules say why
    if (topo.numaVertex(*node) == hal::NoVertex) {
      if (node != role.numaNode) // the role's own node is reported by the CPU rules
        ctx.diags.report(DiagCode::ERR_HAL_NUMA_001, where)
                .note(Location::none(), "used by the hugepage pool of role '" + role.role + "'")
            << *node;
      continue;
    }
    auto why = [&](DiagBuilder &d) {
      if (!pool.nodeWhy.empty())
        d.note(Location::none(), pool.nodeWhy);
    };
    // A pool is node memory set aside: no reservation can make one larger than its node.
    uint64_t nodeBytes = topo.numaInfo(*node)->memoryBytes;
    if (nodeBytes && pool.pageSize && pool.pages > nodeBytes / pool.pageSize) {
      DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_HUGE_004, where);
      why(d);
      d.note(Location::none(), "at most " + std::to_string(nodeBytes / pool.pageSize) + " page(s) of " + pageSize +
                                   " fit in NUMA node " + std::to_string(*node) + ", before the kernel and the job take theirs");
      d << role.role << pool.pages << pageSize << formatBytes({pool.pages * pool.pageSize}) << *node
        << formatMeasuredBytes(nodeBytes);
      continue;
    }
    std::optional<uint64_t> free = topo.freeHugepages(*node, pool.pageSize);
    if (!free) {
      DiagBuilder d = ctx.diags.report(DiagCode::WRN_HAL_HUGE_003, where);
      why(d);
      if (const hal::HugepagePool *recorded = topo.hugepagePool(*node, pool.pageSize))
        d.note(Location::none(), "the topology records the pool of NUMA node " + std::to_string(*node) + ": " +
                                     formatMeasuredBytes(pool.pageSize) + " pages " + recorded->freeText());
      d << pageSize << *node;
      continue;
    }
    if (*free >= pool.pages)
      continue;
    uint64_t available = *free;
    uint64_t shortfall = pool.pages - available;
    if (pool.shortfall == HugepageClaim::Shortfall::Reserve) {
      reservations.push_back({role.role, shortfall});
      continue;
    }
    DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_HUGE_002, where);
    why(d);
    if (pool.shortfall == HugepageClaim::Shortfall::RefusedByNodeConfig)
      d.note(Location::none(), "the plan reserves the missing " + std::to_string(shortfall) +
                                   " page(s) but the node config sets hugepages.auto_allocate: false");
    else
      d.note(Location::none(), "set 'auto_allocate_hugepages = true;' to reserve the missing " +
                                   std::to_string(shortfall) + " page(s) when the plan is applied");
    d.note(Location::none(), "cat " + freePagesFile(*node, pool.pageSize) + " shows the free pages");
    d << role.role << pool.pages << pageSize << *node << available;
  }
  return reservations;
}

} // namespace msc::admission
