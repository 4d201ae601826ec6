#include "cluster/placement/Reservation.h"

#include "hal/DomainView.h"
#include "passes/Resolve.h"

#include <llvm/ADT/STLExtras.h>

namespace msc::cluster {

namespace {

bool reserved(const hal::Topology &t, hal::VertexId device, const Reservation &r, PciBus &domain) {
  std::optional<PciBus> d = hal::pcieDomainOf(t, device);
  if (!d || !llvm::is_contained(r.domains, *d))
    return false;
  domain = *d;
  return true;
}

std::string holderName(const PciBus &domain) { return "PCIe domain " + domain.str() + ", reserved"; }

} // namespace

std::vector<admission::Claims> reservationClaims(const hal::Topology &t, const Reservation &r) {
  std::vector<admission::Claims> out;
  for (const PciBus &domain : r.domains) {
    admission::Claims holder;
    holder.contract = holderName(domain);
    for (const hal::GpuRef &gpu : t.gpus()) {
      PciBus at;
      if (!reserved(t, gpu.vertex, r, at) || at != domain)
        continue;
      admission::RoleClaims role;
      role.role = "gpu" + std::to_string(gpu.index);
      admission::GpuClaim claim;
      claim.pci = gpu.info->pci;
      claim.sms = gpu.info->smCount;
      claim.memoryBytes = gpu.info->memoryBytes;
      role.gpu = claim;
      holder.roles.push_back(std::move(role));
    }
    for (hal::VertexId v : t.verticesOf(hal::VertexKind::RdmaDevice)) {
      PciBus at;
      const hal::RdmaInfo *info = t.vertex(v).as<hal::RdmaInfo>();
      if (!reserved(t, v, r, at) || at != domain || !info || !info->maxQueuePairs)
        continue;
      admission::RoleClaims role;
      role.role = t.vertex(v).name;
      admission::RdmaClaim claim;
      claim.primary.device = t.vertex(v).name;
      claim.queuePairs = *info->maxQueuePairs;
      role.rdma = claim;
      holder.roles.push_back(std::move(role));
    }
    if (!holder.roles.empty())
      out.push_back(std::move(holder));
  }
  return out;
}

std::optional<ReservedUse> reservedUse(const passes::Placement &placement, const hal::Topology &t,
                                       const Reservation &r) {
  if (r.empty())
    return std::nullopt;
  auto use = [&](const passes::RolePlacement &role, ReservedUse::Device device, const std::string &what,
                 const PciBus &domain) {
    return ReservedUse{role.role, device,
                       "role '" + role.role + "' would use " + what + " in PCIe domain " + domain.str() +
                           ", reserved by " + r.by};
  };
  for (const passes::RolePlacement &role : placement.roles) {
    PciBus domain;
    if (role.gpu && reserved(t, t.findPci(role.gpu->pci), r, domain))
      return use(role, ReservedUse::Device::Gpu, "GPU " + role.gpu->pci.str(), domain);
    if (!role.rdmaDevice.empty() && reserved(t, t.findDevice(role.rdmaDevice), r, domain))
      return use(role, ReservedUse::Device::Rdma, "RDMA device " + role.rdmaDevice, domain);
    if (role.blockPci && reserved(t, t.findPci(*role.blockPci), r, domain))
      return use(role, ReservedUse::Device::Block, "NVMe " + role.blockDevice, domain);
  }
  return std::nullopt;
}

ReservedCounts reservedCounts(const hal::Topology &t, const Reservation &r) {
  ReservedCounts c;
  if (r.empty())
    return c;
  PciBus domain;
  for (const hal::GpuRef &gpu : t.gpus())
    c.gpus += reserved(t, gpu.vertex, r, domain);
  for (hal::VertexId v : t.verticesOf(hal::VertexKind::RdmaDevice))
    c.hcas += passes::hasUsablePort(t, v) && reserved(t, v, r, domain);
  return c;
}

} // namespace msc::cluster
