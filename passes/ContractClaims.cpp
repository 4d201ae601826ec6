#include "passes/ContractClaims.h"

#include "ir/ValueFormat.h"
#include "passes/Lowering.h"
#include "passes/PassUtil.h"
#include "passes/Resolve.h"

namespace msc::passes {

namespace {

admission::GpuClaim gpuClaim(const ir::Contract &contract, const ir::Role &role, const RolePlacement &r,
                             const hal::Topology *topo) {
  const ir::ComputeFields &compute = contract.body.compute;
  const ir::RoleFields &f = role.fields;
  admission::GpuClaim g;
  g.at = at(f.gpu->origin);
  g.found = r.gpu.has_value();
  if (!g.found) // only a GPU the placement could not resolve is reported as written
    g.written = ir::formatValue(f.gpu->value);
  g.slices = r.smSlices;
  if (compute.gpu_sm_slices) {
    g.division = std::max<unsigned>(1, static_cast<unsigned>(compute.gpu_sm_slices->value));
    g.divisionAt = at(compute.gpu_sm_slices->origin);
    g.divisionSetBy = compute.gpu_sm_slices->origin.declaration;
  }
  // The role's own limit, else the contract's gpu_memory "on each GPU it uses", which its roles on
  // one GPU share (admission::gpuMemoryOf counts it once).
  if (f.gpu_memory) {
    g.memoryBytes = f.gpu_memory->value.value;
  } else if (compute.gpu_memory) {
    g.memoryBytes = compute.gpu_memory->value.value;
    g.memoryPerGpu = true;
  }
  if (!r.gpu)
    return g;
  g.pci = r.gpu->pci;
  if (topo && r.gpu->smCount)
    g.sms = smsForSlices(*topo, *r.gpu, std::max(g.division, r.smSlices), std::max(1u, r.smSlices));
  return g;
}

admission::RdmaPortClaim portClaim(const ir::Field<ir::RdmaPortRef> &field) {
  return {field.value.device, field.value.port, at(field.origin)};
}

} // namespace

admission::Claims claimsOf(const ir::Contract &contract, const Placement &placement, const hal::Topology *topo) {
  admission::Claims claims;
  claims.contract = contract.name;
  claims.contractAt = Location{contract.nameRange, {}, 0};
  const auto &autoAllocate = contract.body.compute.auto_allocate_hugepages;
  for (const ir::Role &role : contract.body.roles) {
    const RolePlacement *r = placement.findRole(role.name);
    if (!r)
      continue;
    const ir::RoleFields &f = role.fields;
    admission::RoleClaims &c = claims.roles.emplace_back();
    c.role = role.name;
    if (f.cpu_cores) {
      c.cpus.assign(f.cpu_cores->value.begin(), f.cpu_cores->value.end());
      c.physicalCores = r->physicalCores;
      c.cpusAt = at(f.cpu_cores->origin);
    }
    if (f.numa_node) {
      c.numaNode = static_cast<unsigned>(f.numa_node->value);
      c.numaAt = at(f.numa_node->origin);
    }
    if (f.gpu)
      c.gpu = gpuClaim(contract, role, *r, topo);
    if (f.memory_pool) {
      admission::HugepageClaim &h = c.hugepages.emplace();
      h.numaNode = r->poolNumaNode ? r->poolNumaNode : r->numaNode;
      if (r->rdmaNumaNode && h.numaNode == r->rdmaNumaNode && h.numaNode != r->numaNode)
        h.nodeWhy = "NUMA node " + std::to_string(*h.numaNode) + " is RDMA device '" + r->rdmaDevice +
                    "''s, which the pool is registered with";
      h.pageSize = f.memory_pool->value.pageSize.value;
      h.pages = f.memory_pool->value.count;
      if (autoAllocate && autoAllocate->value)
        h.shortfall = admission::HugepageClaim::Shortfall::Reserve;
      h.at = at(f.memory_pool->origin);
    }
    if (f.io_queue) {
      admission::BlockClaim &b = c.block.emplace();
      b.device = r->blockDevice;
      b.written = f.io_queue->value;
      b.at = at(f.io_queue->origin);
      if (f.io_depth) {
        b.ioDepth = static_cast<uint32_t>(std::max<int64_t>(0, f.io_depth->value));
        b.ioDepthAt = at(f.io_depth->origin);
      }
    }
    if (f.rdma_port) {
      admission::RdmaClaim &rd = c.rdma.emplace();
      rd.primary = portClaim(*f.rdma_port);
      if (f.failover_port)
        rd.failover = portClaim(*f.failover_port);
      rd.queuePairs = queuePairsOf(contract, role);
      if (f.link_layer) {
        rd.linkLayer = f.link_layer->value;
        rd.linkLayerAt = at(f.link_layer->origin);
      }
    }
  }
  return claims;
}

} // namespace msc::passes
