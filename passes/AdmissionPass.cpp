// admission: the contract double-books nothing that admitted contracts already hold on the node:
// physical cores, GPU SMs and memory, hugepages. The error names the holder.
#include "passes/PassUtil.h"
#include "passes/Lowering.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <map>

namespace msc::passes {

namespace {

class AdmissionPass : public Pass {
public:
  llvm::StringRef name() const override { return "admission"; }
  llvm::StringRef summary() const override {
    return "nothing the contract needs is already held by a contract admitted on the node";
  }

  void run(PassContext &ctx) override {
    const ir::Contract &c = ctx.contract;
    for (const Holding &h : ctx.admitted.holdings)
      if (h.contract == c.name) {
        ctx.diags.report(DiagCode::ERR_HAL_ADMIT_005, c.nameRange)
                .note(Location::none(), "release it first (mscale-cli contract release " + c.name +
                                            ") or give the new contract another name")
            << c.name;
        return;
      }
    checkCores(ctx);
    checkGpus(ctx);
    checkHugepages(ctx);
    checkQueuePairs(ctx);
  }

private:
  void checkCores(PassContext &ctx) {
    std::map<unsigned, const Holding *> held;
    for (const Holding &h : ctx.admitted.holdings)
      for (unsigned core : h.physicalCores)
        held.emplace(core, &h);
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r || !role.fields.cpu_cores)
        continue;
      for (unsigned core : r->physicalCores)
        if (auto it = held.find(core); it != held.end())
          ctx.diags.report(DiagCode::ERR_HAL_ADMIT_001, at(role.fields.cpu_cores->origin))
                  .note(Location::none(), "core " + std::to_string(core) + " runs CPUs " +
                                              joinNumbers(ctx.topology->smtSiblings(core)))
              << core << role.name << it->second->contract;
    }
  }

  void checkGpus(PassContext &ctx) {
    const ir::ComputeFields &compute = ctx.contract.body.compute;
    unsigned division = compute.gpu_sm_slices && compute.gpu_sm_slices->value > 0
                            ? static_cast<unsigned>(compute.gpu_sm_slices->value)
                            : 1;
    struct Need {
      const GpuPlacement *gpu = nullptr;
      const ir::Role *role = nullptr;
      unsigned sms = 0;
      uint64_t memory = 0;
    };
    std::map<PciAddress, Need> needs;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r || !r->gpu)
        continue;
      Need &n = needs[r->gpu->pci];
      n.gpu = &*r->gpu;
      n.role = n.role ? n.role : &role;
      if (r->gpu->smCount)
        n.sms += smsForSlices(*ctx.topology, *r->gpu, std::max(division, r->smSlices), std::max(1u, r->smSlices));
      if (role.fields.gpu_memory)
        n.memory += role.fields.gpu_memory->value.value;
    }
    for (auto &[pci, need] : needs) {
      if (!need.memory && compute.gpu_memory)
        need.memory = compute.gpu_memory->value.value;
      unsigned heldSms = 0;
      uint64_t heldMemory = 0;
      const Holding *biggestSms = nullptr, *biggestMemory = nullptr;
      unsigned biggestSmsCount = 0;
      uint64_t biggestMemoryCount = 0;
      for (const Holding &h : ctx.admitted.holdings)
        for (const Holding::Gpu &g : h.gpus) {
          if (g.pci != pci)
            continue;
          heldSms += g.sms;
          heldMemory += g.memoryBytes;
          if (g.sms > biggestSmsCount)
            biggestSms = &h, biggestSmsCount = g.sms;
          if (g.memoryBytes > biggestMemoryCount)
            biggestMemory = &h, biggestMemoryCount = g.memoryBytes;
        }
      Location where = at(need.role->fields.gpu->origin);
      if (need.gpu->smCount && biggestSms && heldSms + need.sms > need.gpu->smCount)
        ctx.diags.report(DiagCode::ERR_HAL_ADMIT_002, where)
            << pci.str() << (need.gpu->smCount > heldSms ? need.gpu->smCount - heldSms : 0u) << need.role->name
            << need.sms << biggestSms->contract << biggestSmsCount;
      if (need.gpu->memoryBytes && biggestMemory && heldMemory + need.memory > need.gpu->memoryBytes)
        ctx.diags.report(DiagCode::ERR_HAL_ADMIT_003, where)
            << pci.str()
            << ir::formatBytes({need.gpu->memoryBytes > heldMemory ? need.gpu->memoryBytes - heldMemory : 0})
            << ir::formatBytes({need.memory}) << biggestMemory->contract << ir::formatBytes({biggestMemoryCount});
    }
  }

  void checkQueuePairs(PassContext &ctx) {
    const hal::Topology &topo = *ctx.topology;
    for (const ir::Role &role : ctx.contract.body.roles) {
      if (!role.fields.rdma_port)
        continue;
      const std::string &device = role.fields.rdma_port->value.device;
      const hal::RdmaInfo *info = topo.rdmaDevice(device);
      if (!info || !info->maxQueuePairs)
        continue;
      uint64_t held = 0;
      for (const Holding &h : ctx.admitted.holdings)
        for (const Holding::QueuePairs &qp : h.queuePairs)
          if (qp.device == device)
            held += qp.count;
      uint64_t needed = queuePairsOf(ctx.contract, role);
      if (held && held + needed > *info->maxQueuePairs)
        ctx.diags.report(DiagCode::ERR_HAL_ADMIT_006, at(role.fields.rdma_port->origin))
            << device << *info->maxQueuePairs << held << role.name << needed;
    }
  }

  void checkHugepages(PassContext &ctx) {
    const hal::Topology &topo = *ctx.topology;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r || !role.fields.memory_pool)
        continue;
      std::optional<unsigned> node = r->poolNumaNode ? r->poolNumaNode : r->numaNode;
      if (!node)
        continue;
      const ir::HugepagePool &pool = role.fields.memory_pool->value;
      std::optional<uint64_t> free = topo.freeHugepages(*node, pool.pageSize.value);
      if (!free)
        continue;
      uint64_t available = *free + r->hugepagesToReserve;
      for (const Holding &h : ctx.admitted.holdings)
        for (const Holding::Hugepages &held : h.hugepages) {
          if (held.numaNode != *node || held.pageSize != pool.pageSize.value)
            continue;
          uint64_t remaining = available > held.pages ? available - held.pages : 0;
          if (remaining < pool.count)
            ctx.diags.report(DiagCode::ERR_HAL_ADMIT_004, at(role.fields.memory_pool->origin))
                << held.pages << ir::formatBytes(pool.pageSize) << *node << h.contract << remaining << role.name
                << pool.count;
          available = remaining;
        }
    }
  }
};

} // namespace

std::unique_ptr<Pass> createAdmissionPass() { return std::make_unique<AdmissionPass>(); }

} // namespace msc::passes
