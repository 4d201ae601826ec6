// Admission: the claims double-book nothing that contracts already admitted on the node hold.
// Every refusal names the holder.
#include "admission/Rules.h"
#include "support/Units.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/MathExtras.h>

#include <map>

namespace msc::admission {

namespace {

void checkCores(const Claims &claims, const Held &held, const RuleContext &ctx) {
  // A contract claims a handful of cores and a node may hold thousands of contracts: one pass over
  // what is held, looking each held core up among the few claimed, allocates nothing per holder.
  struct Claimed {
    unsigned core;
    const RoleClaims *role;
    const Claims *holder = nullptr; // the first admitted contract holding it
  };
  std::vector<Claimed> claimed;
  for (const RoleClaims &role : claims.roles)
    for (unsigned core : role.physicalCores)
      claimed.push_back({core, &role});
  if (claimed.empty())
    return;
  for (const Claims &other : held.contracts)
    for (const RoleClaims &role : other.roles)
      for (unsigned core : role.physicalCores)
        for (Claimed &c : claimed)
          if (c.core == core && !c.holder)
            c.holder = &other;
  for (const Claimed &c : claimed)
    if (c.holder)
      ctx.diags.report(DiagCode::ERR_HAL_ADMIT_001, ctx.at(c.role->cpusAt))
              .note(Location::none(), "core " + std::to_string(c.core) + " runs CPUs " +
                                          joinNumbers(ctx.topology.smtSiblings(c.core)))
          << c.core << c.role->role << c.holder->contract;
}

// What admitted contracts hold of one GPU, and the biggest holder of each kind.
struct GpuHeld {
  unsigned sms = 0, biggestSms = 0;
  uint64_t memory = 0, biggestMemory = 0;
  const Claims *bySms = nullptr, *byMemory = nullptr;
};

// SMs one contract's roles hold of one GPU (saturating, like every sum of claims).
unsigned smsOf(const Claims &claims, const PciAddress &pci) {
  unsigned sms = 0;
  for (const RoleClaims &role : claims.roles)
    if (role.gpu && role.gpu->found && role.gpu->pci == pci)
      sms = llvm::SaturatingAdd(sms, role.gpu->sms);
  return sms;
}

GpuHeld heldOf(const PciAddress &pci, const Held &held) {
  GpuHeld out;
  for (const Claims &other : held.contracts) {
    unsigned sms = smsOf(other, pci);
    uint64_t memory = gpuMemoryOf(other, pci);
    out.sms = llvm::SaturatingAdd(out.sms, sms);
    out.memory = llvm::SaturatingAdd(out.memory, memory);
    if (sms > out.biggestSms)
      out.bySms = &other, out.biggestSms = sms;
    if (memory > out.biggestMemory)
      out.byMemory = &other, out.biggestMemory = memory;
  }
  return out;
}

void checkGpus(const Claims &claims, const Held &held, const RuleContext &ctx) {
  std::map<PciAddress, const RoleClaims *> firstRole; // where an error about a GPU points
  for (const RoleClaims &role : claims.roles)
    if (role.gpu && role.gpu->found)
      firstRole.emplace(role.gpu->pci, &role);
  for (const auto &[pci, role] : firstRole) {
    std::optional<hal::GpuRef> gpu = ctx.topology.gpuByPci(pci);
    if (!gpu)
      continue;
    struct {
      const RoleClaims *role;
      unsigned sms;
      uint64_t memory;
    } need{role, smsOf(claims, pci), gpuMemoryOf(claims, pci)};
    GpuHeld h = heldOf(pci, held);
    Location where = ctx.at(need.role->gpu->at);
    unsigned total = gpu->info->smCount;
    if (total && h.bySms && llvm::SaturatingAdd(h.sms, need.sms) > total)
      ctx.diags.report(DiagCode::ERR_HAL_ADMIT_002, where)
          << pci.str() << (total > h.sms ? total - h.sms : 0u) << need.role->role << need.sms << h.bySms->contract
          << h.biggestSms;
    uint64_t memory = gpu->info->memoryBytes;
    if (memory && h.byMemory && llvm::SaturatingAdd(h.memory, need.memory) > memory)
      ctx.diags.report(DiagCode::ERR_HAL_ADMIT_003, where)
          << pci.str() << formatBytes({memory > h.memory ? memory - h.memory : 0}) << formatBytes({need.memory})
          << h.byMemory->contract << formatBytes({h.biggestMemory});
  }
}

void checkHugepages(const Claims &claims, const Held &held, const RuleContext &ctx,
                    const std::vector<HugepageReservation> &reservations) {
  if (held.hugepagesTakenFromFree)
    return;
  for (const RoleClaims &role : claims.roles) {
    if (!role.hugepages)
      continue;
    const HugepageClaim &pool = *role.hugepages;
    std::optional<unsigned> node = poolNode(ctx.topology, pool);
    if (!node)
      continue;
    std::optional<uint64_t> free = ctx.topology.freeHugepages(*node, pool.pageSize);
    if (!free)
      continue;
    uint64_t available = *free;
    for (const HugepageReservation &r : reservations)
      if (r.role == role.role)
        available = llvm::SaturatingAdd(available, r.pages);
    for (const Claims &other : held.contracts)
      for (const RoleClaims &otherRole : other.roles) {
        if (!otherRole.hugepages)
          continue;
        const HugepageClaim &taken = *otherRole.hugepages;
        if (poolNode(ctx.topology, taken) != node || taken.pageSize != pool.pageSize)
          continue;
        uint64_t remaining = available > taken.pages ? available - taken.pages : 0;
        if (remaining < pool.pages)
          ctx.diags.report(DiagCode::ERR_HAL_ADMIT_004, ctx.at(pool.at))
              << taken.pages << formatBytes({pool.pageSize}) << *node << other.contract << remaining << role.role
              << pool.pages;
        available = remaining;
      }
  }
}

void checkQueuePairs(const Claims &claims, const Held &held, const RuleContext &ctx) {
  for (const RoleClaims &role : claims.roles) {
    if (!role.rdma)
      continue;
    const std::string &device = role.rdma->primary.device;
    const hal::RdmaInfo *info = ctx.topology.rdmaDevice(device);
    if (!info || !info->maxQueuePairs)
      continue;
    uint64_t taken = 0;
    for (const Claims &other : held.contracts)
      for (const RoleClaims &otherRole : other.roles)
        if (otherRole.rdma && otherRole.rdma->primary.device == device)
          taken = llvm::SaturatingAdd<uint64_t>(taken, otherRole.rdma->queuePairs);
    uint64_t needed = role.rdma->queuePairs;
    if (taken && llvm::SaturatingAdd(taken, needed) > *info->maxQueuePairs)
      ctx.diags.report(DiagCode::ERR_HAL_ADMIT_006, ctx.at(role.rdma->primary.at))
          << device << *info->maxQueuePairs << taken << role.role << needed;
  }
}

} // namespace

const Claims *gpuHolder(const Held &held, const PciAddress &gpu) {
  for (const Claims &other : held.contracts)
    for (const RoleClaims &role : other.roles)
      if (role.gpu && role.gpu->found && role.gpu->pci == gpu)
        return &other;
  return nullptr;
}

const Claims *coreHolder(const Held &held, unsigned core) {
  for (const Claims &other : held.contracts)
    for (const RoleClaims &role : other.roles)
      if (llvm::is_contained(role.physicalCores, core))
        return &other;
  return nullptr;
}

void checkAgainstHeld(const Claims &claims, const Held &held, const RuleContext &ctx,
                      const std::vector<HugepageReservation> &reservations) {
  for (const Claims &other : held.contracts)
    if (other.contract == claims.contract) {
      ctx.diags.report(DiagCode::ERR_HAL_ADMIT_005, ctx.at(claims.contractAt))
              .note(Location::none(), "release it first (mscale-cli contract release " + claims.contract +
                                          ") or give the new contract another name")
          << claims.contract;
      return;
    }
  checkCores(claims, held, ctx);
  checkGpus(claims, held, ctx);
  checkHugepages(claims, held, ctx, reservations);
  checkQueuePairs(claims, held, ctx);
}

} // namespace msc::admission
