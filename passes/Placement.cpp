#include "passes/Placement.h"

#include "hal/Topology.h"
#include "ir/IR.h"
#include "ir/ValueFormat.h"
#include "admission/GpuArch.h"
#include "passes/Resolve.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/Format.h>

#include <algorithm>
#include <set>

namespace msc::passes {

RolePlacement &Placement::role(llvm::StringRef name) {
  for (RolePlacement &r : roles)
    if (r.role == name)
      return r;
  roles.push_back({});
  roles.back().role = name.str();
  return roles.back();
}

const RolePlacement *Placement::findRole(llvm::StringRef name) const {
  for (const RolePlacement &r : roles)
    if (r.role == name)
      return &r;
  return nullptr;
}

void Placement::print(llvm::raw_ostream &os, llvm::ArrayRef<admission::HugepageReservation> reservations) const {
  auto list = [](const std::vector<unsigned> &v) {
    std::vector<uint32_t> copy(v.begin(), v.end());
    return ir::formatValue(copy);
  };
  os << "placement {\n";
  for (const RolePlacement &r : roles) {
    os << "  role " << r.role << " {\n";
    auto bound = [&](const std::string &why) {
      if (!why.empty())
        os << " (bound: " << why << ")";
    };
    if (!r.cpus.empty()) {
      os << "    cpus = " << list(r.cpus);
      bound(r.cpusBound);
      os << "\n    physical_cores = " << list(r.physicalCores) << "\n";
    }
    if (r.numaNode)
      os << "    numa_node = " << *r.numaNode << "\n";
    if (r.gpu) {
      os << "    gpu = " << r.gpu->index << " " << r.gpu->pci.str();
      if (!r.gpu->model.empty())
        os << " \"" << r.gpu->model << "\"";
      if (r.gpu->numaNode)
        os << " numa " << *r.gpu->numaNode;
      bound(r.gpuBound);
      os << "\n";
      if (r.smSlices)
        os << "    sm_slices = " << r.smSlices << "\n";
    }
    if (!r.blockDevice.empty()) {
      os << "    block_device = " << r.blockDevice;
      if (r.blockPci)
        os << " " << r.blockPci->str();
      os << "\n";
    }
    if (!r.rdmaDevice.empty()) {
      os << "    rdma = " << r.rdmaDevice << ":" << r.rdmaPort;
      if (r.rdmaNumaNode)
        os << " numa " << *r.rdmaNumaNode;
      bound(r.rdmaBound);
      os << "\n";
    }
    if (r.poolNumaNode)
      os << "    pool_numa_node = " << *r.poolNumaNode << "\n";
    for (const admission::HugepageReservation &reserve : reservations)
      if (reserve.role == r.role)
        os << "    reserve_hugepages = " << reserve.pages << "\n";
    os << "  }\n";
  }
  os << "}\n";
}

std::optional<hal::GpuRef> resolveGpu(const hal::Topology &topo, const ir::GpuRef &ref) {
  switch (ref.form) {
  case ir::GpuRef::Form::Index: return topo.gpuByIndex(ref.index);
  case ir::GpuRef::Form::Pci:
    if (ref.domainGiven)
      return topo.gpuByPci(ref.pci);
    for (const hal::GpuRef &gpu : topo.gpus())
      if (gpu.info->pci.bus == ref.pci.bus && gpu.info->pci.device == ref.pci.device &&
          gpu.info->pci.function == ref.pci.function)
        return gpu;
    return std::nullopt;
  case ir::GpuRef::Form::Uuid:
    for (const hal::GpuRef &gpu : topo.gpus())
      if (llvm::is_contained(gpu.info->aliases, ref.uuid))
        return gpu;
    return std::nullopt;
  case ir::GpuRef::Form::Any: return std::nullopt; // names no GPU until binding (passes/Binding.h) does
  }
  return std::nullopt;
}

std::string rootComplexName(const hal::Topology &topo, hal::VertexId bridge) {
  if (bridge == hal::NoVertex)
    return "no root complex";
  if (const auto *info = topo.vertex(bridge).as<hal::HostBridgeInfo>()) {
    std::string out;
    llvm::raw_string_ostream os(out);
    os << llvm::format("%04x:[%02x-%02x]", info->domain, info->firstBus, info->lastBus);
    return out;
  }
  return topo.label(bridge);
}

bool hasUsablePort(const hal::Topology &topo, hal::VertexId rdma) {
  const auto *info = topo.vertex(rdma).as<hal::RdmaInfo>();
  if (!info || info->ports.empty())
    return true;
  for (const hal::RdmaPort &p : info->ports)
    if (p.state.empty() || llvm::StringRef(p.state).contains_insensitive("active"))
      return true;
  return false;
}

std::string blockDeviceName(llvm::StringRef path) {
  path.consume_front("/dev/");
  return path.str();
}

GpuPlacement gpuPlacement(const hal::Topology &topo, const hal::GpuRef &gpu) {
  GpuPlacement g;
  g.index = gpu.index;
  g.pci = gpu.info->pci;
  g.model = gpu.info->model;
  g.smCount = gpu.info->smCount;
  g.memoryBytes = gpu.info->memoryBytes;
  g.smGranularity = admission::smPartitioning(gpu.info->ccMajor, gpu.info->ccMinor).minSms;
  g.numaNode = topo.numaNodeOfDevice(gpu.vertex);
  return g;
}

unsigned smsForSlices(const hal::Topology &topo, const GpuPlacement &gpu, unsigned division, unsigned slices) {
  std::optional<hal::GpuRef> ref = topo.gpuByPci(gpu.pci);
  admission::SmPartitioning part =
      ref ? admission::smPartitioning(ref->info->ccMajor, ref->info->ccMinor) : admission::SmPartitioning{};
  return admission::smsForSlices(gpu.smCount, division, slices, part);
}

Placement place(const ir::Contract &contract, const hal::Topology *topo) {
  Placement placement;
  for (const ir::Role &role : contract.body.roles) {
    RolePlacement &r = placement.role(role.name);
    const ir::RoleFields &f = role.fields;
    if (f.cpu_cores)
      r.cpus.assign(f.cpu_cores->value.begin(), f.cpu_cores->value.end());
    if (f.sm_slices)
      r.smSlices = static_cast<unsigned>(f.sm_slices->value);
    else if (f.gpu && contract.body.compute.gpu_sm_slices)
      r.smSlices = static_cast<unsigned>(contract.body.compute.gpu_sm_slices->value);
    if (f.io_queue)
      r.blockDevice = blockDeviceName(f.io_queue->value);
    if (f.rdma_port) {
      r.rdmaDevice = f.rdma_port->value.device;
      r.rdmaPort = f.rdma_port->value.port;
    }
    if (!topo) {
      if (f.numa_node)
        r.numaNode = static_cast<unsigned>(f.numa_node->value);
      continue;
    }
    std::set<unsigned> cores;
    std::set<unsigned> cpuNodes;
    for (unsigned cpu : r.cpus) {
      if (!topo->hasPu(cpu))
        continue;
      cores.insert(topo->firstPuOfCore(cpu));
      if (auto node = topo->numaNodeOfPu(cpu))
        cpuNodes.insert(*node);
    }
    r.physicalCores.assign(cores.begin(), cores.end());
    if (f.gpu)
      if (auto gpu = resolveGpu(*topo, f.gpu->value))
        r.gpu = gpuPlacement(*topo, *gpu);
    if (!r.blockDevice.empty()) {
      hal::VertexId block = topo->blockDevice(r.blockDevice);
      if (block != hal::NoVertex) {
        hal::VertexId pci = topo->pciFunctionOf(block);
        if (pci != hal::NoVertex)
          if (const auto *info = topo->vertex(pci).as<hal::PciInfo>())
            r.blockPci = info->address;
      }
    }
    if (!r.rdmaDevice.empty() && topo->rdmaDevice(r.rdmaDevice))
      r.rdmaNumaNode = topo->numaNodeOfDevice(llvm::StringRef(r.rdmaDevice));
    // The role's NUMA node: as declared, else where its CPUs are, else its device's.
    if (f.numa_node)
      r.numaNode = static_cast<unsigned>(f.numa_node->value);
    else if (cpuNodes.size() == 1)
      r.numaNode = *cpuNodes.begin();
    else if (r.rdmaNumaNode)
      r.numaNode = r.rdmaNumaNode;
    else if (r.gpu && r.gpu->numaNode)
      r.numaNode = r.gpu->numaNode;
    if (f.memory_pool)
      r.poolNumaNode = r.rdmaNumaNode ? r.rdmaNumaNode : r.numaNode;
  }
  return placement;
}

} // namespace msc::passes

namespace msc::passes {

const GpuPlacement *fedGpu(const Placement &placement, const RolePlacement &role) {
  if (role.gpu)
    return &*role.gpu;
  const GpuPlacement *only = nullptr;
  for (const RolePlacement &r : placement.roles) {
    if (!r.gpu)
      continue;
    if (only && only->pci != r.gpu->pci)
      return nullptr;
    only = &*r.gpu;
  }
  return only;
}

} // namespace msc::passes
