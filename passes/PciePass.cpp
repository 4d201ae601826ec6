// pcie: PCI addresses carry their domain; declared PCIe domains exist and hold the role's GPU;
// GPU Direct Storage keeps NVMe on the GPU's root complex; the cluster's IO policy is honoured.
#include "ir/ValueFormat.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>

namespace msc::passes {

namespace {

bool bridgeServes(const hal::Topology &topo, hal::VertexId bridge, const PciBus &bus) {
  if (bridge == hal::NoVertex)
    return false;
  const auto *info = topo.vertex(bridge).as<hal::HostBridgeInfo>();
  return info && info->domain == bus.domain && info->firstBus <= bus.bus && bus.bus <= info->lastBus;
}

hal::VertexId gpuVertex(const hal::Topology &topo, const GpuPlacement &gpu) {
  auto ref = topo.gpuByPci(gpu.pci);
  return ref ? ref->vertex : hal::NoVertex;
}

class PciePass : public Pass {
public:
  llvm::StringRef name() const override { return "pcie"; }
  llvm::StringRef summary() const override {
    return "PCI addresses, PCIe domains, GPU Direct Storage locality and the cross-domain IO policy";
  }

  void run(PassContext &ctx) override {
    const hal::Topology &topo = *ctx.topology;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r)
        continue;
      checkDomainGiven(ctx, role, r);
      if (role.fields.pcie_domain)
        checkDeclaredDomain(ctx, role, *r);
      if (role.fields.gds && role.fields.gds->value)
        checkGds(ctx, role, *r);
    }
    const ir::PolicyFields &policy = ctx.contract.body.policy;
    if (policy.cross_domain_io && !policy.cross_domain_io->value)
      checkCrossDomain(ctx);
    checkNicAffinity(ctx, policy.affinity_policy && policy.affinity_policy->value == "pcie_domain_first");
    (void)topo;
  }

private:
  // "81:00.0" names a bus in some domain; on a multi-domain node it is ambiguous.
  void checkDomainGiven(PassContext &ctx, const ir::Role &role, const RolePlacement *r) {
    if (!role.fields.gpu || role.fields.gpu->value.form != ir::GpuRef::Form::Pci || role.fields.gpu->value.domainGiven)
      return;
    const ir::Origin &origin = role.fields.gpu->origin;
    uint32_t domain = r && r->gpu ? r->gpu->pci.domain : 0;
    std::string prefix;
    llvm::raw_string_ostream os(prefix);
    os << llvm::format("%04x:", domain);
    PciAddress full = role.fields.gpu->value.pci;
    full.domain = domain;
    // Quote the address as written (bus:device.function), not with a domain the user did not write.
    std::string written;
    llvm::raw_string_ostream ws(written);
    ws << llvm::format("%02x:%02x.%x", full.bus, full.device, full.function);
    // On a multi-domain node the short form can name several GPUs: list them, guess none.
    std::vector<std::string> candidates;
    for (const hal::GpuRef &gpu : ctx.topology->gpus())
      if (gpu.info->pci.bus == full.bus && gpu.info->pci.device == full.device &&
          gpu.info->pci.function == full.function)
        candidates.push_back(gpu.info->pci.str());
    DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_PCIE_001, at(origin));
    d << written;
    if (candidates.size() > 1)
      d.note(Location::none(), "'" + written + "' exists in several PCI domains here: " + llvm::join(candidates, ", "));
    else
      d.noteWithFixIt(at(origin), "did you mean '" + full.str() + "'?", {{origin.range.Start, origin.range.Start}, prefix});
  }

  void checkDeclaredDomain(PassContext &ctx, const ir::Role &role, const RolePlacement &r) {
    const hal::Topology &topo = *ctx.topology;
    const PciBus &bus = role.fields.pcie_domain->value;
    bool exists = false;
    std::string known;
    for (hal::VertexId hb : topo.verticesOf(hal::VertexKind::HostBridge)) {
      exists |= bridgeServes(topo, hb, bus);
      known += (known.empty() ? "" : ", ") + rootComplexName(topo, hb);
    }
    if (!exists) {
      ctx.diags.report(DiagCode::ERR_HAL_PCIE_002, at(role.fields.pcie_domain->origin))
              .note(Location::none(), known.empty() ? "the topology has no PCI host bridges"
                                                    : "root complexes of this node: " + known)
          << bus.str();
      return;
    }
    if (!r.gpu)
      return;
    hal::VertexId hb = topo.rootComplexOf(gpuVertex(topo, *r.gpu));
    if (!bridgeServes(topo, hb, bus))
      ctx.diags.report(DiagCode::ERR_HAL_PCIE_003, at(role.fields.gpu->origin))
              .note(at(role.fields.pcie_domain->origin), "pcie_domain declared here")
              .note(Location::none(), "GPU " + r.gpu->pci.str() + " sits under root complex " + rootComplexName(topo, hb))
          << r.gpu->pci.str() << role.name << bus.str();
  }

  void checkGds(PassContext &ctx, const ir::Role &role, const RolePlacement &r) {
    const hal::Topology &topo = *ctx.topology;
    const GpuPlacement *gpu = fedGpu(ctx.placement, r);
    if (!gpu)
      return;
    hal::VertexId gv = gpuVertex(topo, *gpu);
    for (const ir::Role &other : ctx.contract.body.roles) {
      const RolePlacement *o = ctx.placement.findRole(other.name);
      if (!o || !o->blockPci || !llvm::StringRef(o->blockDevice).starts_with("nvme"))
        continue;
      hal::VertexId nv = topo.findPci(*o->blockPci);
      if (topo.shareRootComplex(gv, nv))
        continue;
      ctx.diags.report(DiagCode::ERR_HAL_PCIE_004, at(other.fields.io_queue->origin))
              .note(at(role.fields.gds->origin), "GPU Direct Storage enabled here for role '" + role.name + "'")
              .note(Location::none(), "GPU " + gpu->pci.str() + " is under root complex " +
                                          rootComplexName(topo, topo.rootComplexOf(gv)) + ", '" + o->blockDevice +
                                          "' under " + rootComplexName(topo, topo.rootComplexOf(nv)) +
                                          " (link class " + topo.linkClass(gv, nv).str() + ")")
          << o->blockDevice << gpu->pci.str();
    }
  }

  void checkCrossDomain(PassContext &ctx) {
    const hal::Topology &topo = *ctx.topology;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      const GpuPlacement *gpu = r ? fedGpu(ctx.placement, *r) : nullptr;
      if (!gpu)
        continue;
      hal::VertexId gv = gpuVertex(topo, *gpu);
      auto check = [&](hal::VertexId device, const std::string &name, const ir::Origin &origin) {
        if (device == hal::NoVertex || topo.shareRootComplex(gv, device))
          return;
        ctx.diags.report(DiagCode::ERR_HAL_PCIE_005, at(origin))
                .note(at(ctx.contract.body.policy.cross_domain_io->origin), "cross_domain_io = false set here")
                .note(Location::none(), "GPU " + gpu->pci.str() + " is under root complex " +
                                            rootComplexName(topo, topo.rootComplexOf(gv)) + ", '" + name + "' under " +
                                            rootComplexName(topo, topo.rootComplexOf(device)))
            << name << role.name << gpu->pci.str();
      };
      if (r->blockPci)
        check(topo.findPci(*r->blockPci), r->blockDevice, role.fields.io_queue->origin);
      if (!r->rdmaDevice.empty())
        check(topo.findDevice(r->rdmaDevice), r->rdmaDevice, role.fields.rdma_port->origin);
    }
  }

  // Under pcie_domain_first a closer usable NIC makes the pairing an error; under any policy a NIC
  // across the inter-socket link from its GPU (SYS) is a warning, as CPUs far from the GPU are.
  void checkNicAffinity(PassContext &ctx, bool pcieDomainFirst) {
    const hal::Topology &topo = *ctx.topology;
    for (const ir::Role &role : ctx.contract.body.roles) {
      const RolePlacement *r = ctx.placement.findRole(role.name);
      if (!r || r->rdmaDevice.empty())
        continue;
      const GpuPlacement *gpu = fedGpu(ctx.placement, *r);
      hal::VertexId nic = topo.findDevice(r->rdmaDevice);
      if (!gpu || nic == hal::NoVertex)
        continue;
      hal::VertexId gv = gpuVertex(topo, *gpu);
      hal::LinkClass current = topo.linkClass(gv, nic);
      std::string bestName;
      hal::LinkClass best = current;
      for (hal::VertexId other : topo.verticesOf(hal::VertexKind::RdmaDevice)) {
        if (!hasUsablePort(topo, other))
          continue; // never suggest a NIC whose ports are all down
        hal::LinkClass link = topo.linkClass(gv, other);
        if (link.kind < best.kind) {
          best = link;
          bestName = topo.vertex(other).name;
        }
      }
      const ir::Origin &origin = role.fields.rdma_port->origin;
      std::string replacement = "\"" + bestName + ":" + std::to_string(r->rdmaPort) + "\"";
      if (pcieDomainFirst && !bestName.empty()) {
        ctx.diags.report(DiagCode::ERR_HAL_PCIE_006, at(origin))
                .note(at(ctx.contract.body.policy.affinity_policy->origin), "affinity_policy set here")
                .noteWithFixIt(at(origin), "use the NIC closest to the GPU", {origin.range, replacement})
            << r->rdmaDevice << current.str() << gpu->pci.str() << bestName << best.str();
        continue;
      }
      if (current.kind != hal::LinkClass::Sys)
        continue;
      DiagBuilder d = ctx.diags.report(DiagCode::WRN_HAL_PCIE_007, at(origin));
      d << r->rdmaDevice << role.name << gpu->pci.str();
      if (bestName.empty())
        d.note(Location::none(), "no usable RDMA device of this node is closer to GPU " + gpu->pci.str());
      else
        d.noteWithFixIt(at(origin), "'" + bestName + "' is " + best.str() + " from the GPU", {origin.range, replacement});
    }
  }
};

} // namespace

std::unique_ptr<Pass> createPciePass() { return std::make_unique<PciePass>(); }

} // namespace msc::passes
