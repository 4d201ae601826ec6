// A plan's claims: the way back from what the compiler wrote to what the rules judge.
#include "admission/Claims.h"

#include <algorithm>

namespace msc::admission {

namespace {

RoleClaims &roleOf(Claims &claims, const std::string &name) {
  for (RoleClaims &r : claims.roles)
    if (r.role == name)
      return r;
  claims.roles.push_back({});
  claims.roles.back().role = name;
  return claims.roles.back();
}

std::optional<unsigned> node(int32_t numa) {
  return numa >= 0 ? std::optional<unsigned>(static_cast<unsigned>(numa)) : std::nullopt;
}

} // namespace

Claims claimsFromPlan(const plan::Plan &p) {
  Claims claims;
  claims.contract = p.provenance().contract();
  // Plans of format 1.0 do not say whether numa_node was written; they bound CPUs to it.
  bool declaredUnknown = p.format_major() == 1 && p.format_minor() == 0;
  for (const plan::IoBinding &b : p.io_bindings()) {
    RoleClaims &r = roleOf(claims, b.role());
    r.cpus.assign(b.cpus().begin(), b.cpus().end());
    r.physicalCores.assign(b.physical_cores().begin(), b.physical_cores().end());
    if (b.numa_node_declared() || declaredUnknown)
      r.numaNode = node(b.numa_node());
    if (!b.block_device().empty())
      r.block = BlockClaim{b.block_device(), "/dev/" + b.block_device(), b.io_uring_depth(), {}, {}};
  }
  for (const plan::GpuSlice &s : p.gpu_slices()) {
    GpuClaim g;
    std::optional<PciAddress> pci = parsePciAddress(s.pci_address());
    g.found = pci.has_value();
    g.pci = pci.value_or(PciAddress{});
    g.written = s.pci_address();
    g.slices = s.mechanism() == plan::GpuSlice::WHOLE_GPU ? 0 : s.slices();
    g.division = std::max(1u, s.slices_per_gpu());
    g.sms = s.sm_count();
    g.memoryBytes = s.memory_limit_bytes();
    g.memoryPerGpu = s.memory_per_gpu();
    roleOf(claims, s.role()).gpu = g;
  }
  for (const plan::MemoryPool &m : p.memory_pools()) {
    HugepageClaim h;
    h.numaNode = node(m.numa_node());
    h.pageSize = m.page_size();
    h.pages = m.pages();
    h.shortfall = m.reserve_pages() > 0 ? HugepageClaim::Shortfall::Reserve : HugepageClaim::Shortfall::Refuse;
    roleOf(claims, m.role()).hugepages = h;
  }
  for (const plan::RdmaSetting &s : p.rdma()) {
    RdmaClaim r;
    r.primary = {s.device(), s.port(), {}};
    if (!s.failover_device().empty())
      r.failover = RdmaPortClaim{s.failover_device(), s.failover_port(), {}};
    r.queuePairs = std::max(1u, s.queue_pairs()); // as lowering counts them: at least one
    r.linkLayer = s.link_layer();
    roleOf(claims, s.role()).rdma = r;
  }
  return claims;
}

} // namespace msc::admission
