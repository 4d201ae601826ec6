// hugepages: a pool's page size exists on the node and enough pages are free on the NUMA node
// that uses the pool; with auto_allocate_hugepages the shortfall becomes a planned reservation.
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include <set>

namespace msc::passes {

namespace {

class HugepagePass : public Pass {
public:
  llvm::StringRef name() const override { return "hugepages"; }
  llvm::StringRef summary() const override {
    return "hugepage pools use a supported page size and fit the free pages of their NUMA node";
  }

  void run(PassContext &ctx) override {
    const hal::Topology &topo = *ctx.topology;
    std::set<uint64_t> sizes;
    for (unsigned node : topo.numaNodes())
      if (const hal::NumaInfo *info = topo.numaInfo(node))
        for (const hal::HugepagePool &pool : info->hugepages)
          sizes.insert(pool.pageSize);
    const auto &autoAllocate = ctx.contract.body.compute.auto_allocate_hugepages;
    for (const ir::Role &role : ctx.contract.body.roles) {
      if (!role.fields.memory_pool)
        continue;
      const auto &field = *role.fields.memory_pool;
      const ir::HugepagePool &pool = field.value;
      std::string pageSize = ir::formatBytes(pool.pageSize);
      if (!sizes.empty() && !sizes.count(pool.pageSize.value)) {
        std::string supported;
        for (uint64_t s : sizes)
          supported += (supported.empty() ? "" : ", ") + ir::formatBytes({s});
        ctx.diags.report(DiagCode::ERR_HAL_HUGE_001, at(field.origin))
                .note(Location::none(), "hugepage sizes of this node: " + supported +
                                            " (ls /sys/kernel/mm/hugepages)")
            << pageSize;
        continue;
      }
      RolePlacement &r = ctx.placement.role(role.name);
      std::optional<unsigned> node = r.poolNumaNode ? r.poolNumaNode : r.numaNode;
      if (!node && topo.numaNodes().size() == 1)
        node = topo.numaNodes().front();
      if (!node)
        continue; // nothing says where the pool lives; the cpu-numa and rdma passes say why
      std::optional<uint64_t> free = topo.freeHugepages(*node, pool.pageSize.value);
      if (!free) {
        ctx.diags.report(DiagCode::WRN_HAL_HUGE_003, at(field.origin)) << pageSize << *node;
        continue;
      }
      if (*free >= pool.count)
        continue;
      uint64_t shortfall = pool.count - *free;
      if (autoAllocate && autoAllocate->value) {
        r.hugepagesToReserve = shortfall;
        continue;
      }
      std::string sysfs = "/sys/devices/system/node/node" + std::to_string(*node) + "/hugepages/hugepages-" +
                          std::to_string(pool.pageSize.value / 1024) + "kB/free_hugepages";
      ctx.diags.report(DiagCode::ERR_HAL_HUGE_002, at(field.origin))
              .note(Location::none(), "set 'auto_allocate_hugepages = true;' to reserve the missing " +
                                          std::to_string(shortfall) + " page(s) when the plan is applied")
              .note(Location::none(), "cat " + sysfs + " shows the free pages")
          << role.name << pool.count << pageSize << *node << *free;
    }
  }
};

} // namespace

std::unique_ptr<Pass> createHugepagePass() { return std::make_unique<HugepagePass>(); }

} // namespace msc::passes
