// Writing the YAML topology format: a Topology is turned into the document (in a canonical order,
// so that equal topologies give equal bytes) and printed by LLVM YAML I/O.
#include "hal/TopologyYaml.h"
#include "hal/detail/TopologyYamlDocument.h"
#include "support/CpuList.h"

#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdio>
#include <tuple>

using namespace msc::hal::doc;

namespace msc::hal {
namespace {

std::string formatPciId(uint16_t vendor, uint16_t device) {
  if (!vendor && !device)
    return "";
  char buf[16];
  snprintf(buf, sizeof buf, "%04x:%04x", vendor, device);
  return buf;
}

Bdf bdf(const PciAddress &a) { return Bdf{a, {}, 0}; }

class Exporter {
public:
  explicit Exporter(const Topology &t) : t_(t) {}

  NodeDoc run() {
    NodeDoc n;
    n.name = t_.name();
    n.kernel_cmdline = t_.kernelCmdline();
    std::vector<unsigned> offline;
    for (unsigned pu : t_.pus())
      if (!t_.isPuOnline(pu))
        offline.push_back(pu);
    n.offline_cpus = formatCpuList(offline);
    std::vector<VertexId> pkgs = t_.verticesOf(VertexKind::Package);
    for (size_t i = 0; i < pkgs.size(); ++i) {
      int64_t os = t_.vertex(pkgs[i]).osIndex;
      n.packages.push_back(Package{unsigned(os >= 0 ? os : int64_t(i)), CpuList{pusUnder(pkgs[i]), {}, 0}});
    }
    std::stable_sort(n.packages.begin(), n.packages.end(), [](auto &a, auto &b) { return a.id < b.id; });
    std::vector<unsigned> numa = t_.numaNodes();
    for (unsigned id : numa) {
      const NumaInfo &info = *t_.numaInfo(id);
      Numa nd;
      nd.id = id;
      nd.memory_bytes = info.memoryBytes;
      nd.cpus.cpus = info.cpus;
      nd.subtype = info.subtype;
      for (const HugepagePool &h : info.hugepages)
        nd.hugepages.push_back(Hugepages{h.pageSize, h.total, h.free});
      bool complete = true;
      for (unsigned other : numa) {
        auto d = t_.numaDistance(id, other);
        complete &= d.has_value();
        nd.distances.push_back(U64{d.value_or(0)});
      }
      if (!complete)
        nd.distances.clear();
      n.numa_nodes.push_back(std::move(nd));
    }
    bool smt = false;
    std::vector<CpuList> cores;
    for (VertexId c : t_.verticesOf(VertexKind::Core)) {
      CpuList l{pusUnder(c), {}, 0};
      smt |= l.cpus.size() > 1;
      if (!l.cpus.empty())
        cores.push_back(std::move(l));
    }
    std::stable_sort(cores.begin(), cores.end(), [](auto &a, auto &b) { return a.cpus.front() < b.cpus.front(); });
    if (smt)
      n.cores = std::move(cores);

    std::vector<VertexId> hbs = t_.verticesOf(VertexKind::HostBridge);
    std::stable_sort(hbs.begin(), hbs.end(), [&](VertexId a, VertexId b) {
      auto *x = t_.vertex(a).as<HostBridgeInfo>(), *y = t_.vertex(b).as<HostBridgeInfo>();
      return std::tie(x->domain, x->firstBus) < std::tie(y->domain, y->firstBus);
    });
    for (VertexId hb : hbs) {
      const HostBridgeInfo &h = *t_.vertex(hb).as<HostBridgeInfo>();
      Domain d;
      d.domain = DomainBus{PciBus{h.domain, h.firstBus}, {}, 0};
      if (auto numaNode = t_.numaNodeOfDevice(hb))
        d.numa_node = int(*numaNode);
      collect(hb, d);
      n.topology.pcie_domains.push_back(std::move(d));
    }
    for (const GpuRef &g : t_.gpus())
      n.gpus.push_back(gpuDoc(g));
    for (VertexId v : t_.verticesOf(VertexKind::Nic))
      n.nics.push_back(nicDoc(t_.parent(v)));
    for (VertexId v : t_.verticesOf(VertexKind::NvmeController))
      n.nvme.push_back(nvmeDoc(v));
    std::stable_sort(n.nics.begin(), n.nics.end(), [](auto &a, auto &b) { return a.pci.addr < b.pci.addr; });
    std::stable_sort(n.nvme.begin(), n.nvme.end(), [](auto &a, auto &b) { return a.pci.addr < b.pci.addr; });
    for (VertexId v : t_.verticesOf(VertexKind::ThermalSensor)) {
      const ThermalInfo &th = *t_.vertex(v).as<ThermalInfo>();
      n.thermal.push_back(Thermal{t_.vertex(v).name, th.tempMilliC, th.limitMilliC});
    }
    for (auto [it, end] = boost::edges(t_.graph()); it != end; ++it) {
      const Edge &e = t_.graph()[*it];
      if (e.kind != EdgeKind::NvLink)
        continue;
      auto a = pciOf(boost::source(*it, t_.graph())), b = pciOf(boost::target(*it, t_.graph()));
      if (a && b)
        n.nvlinks.push_back(NvLink{bdf(std::min(*a, *b)), bdf(std::max(*a, *b)), e.count});
    }
    std::stable_sort(n.nvlinks.begin(), n.nvlinks.end(), [](auto &x, auto &y) {
      return std::tie(x.a.addr, x.b.addr) < std::tie(y.a.addr, y.b.addr);
    });
    return n;
  }

private:
  std::optional<PciAddress> pciOf(VertexId v) {
    VertexId f = t_.pciFunctionOf(v);
    if (f == NoVertex)
      return std::nullopt;
    return t_.vertex(f).as<PciInfo>()->address;
  }

  std::vector<unsigned> pusUnder(VertexId v) {
    std::vector<unsigned> out;
    std::vector<VertexId> stack{v};
    while (!stack.empty()) {
      VertexId x = stack.back();
      stack.pop_back();
      if (t_.vertex(x).kind == VertexKind::Pu)
        out.push_back(unsigned(t_.vertex(x).osIndex));
      for (VertexId c : t_.children(x))
        stack.push_back(c);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  template <typename T> void collect(VertexId v, T &into) {
    for (VertexId c : t_.children(v)) {
      const Vertex &x = t_.vertex(c);
      if (x.kind == VertexKind::PciBridge) {
        const PciInfo &pi = *x.as<PciInfo>();
        if (pi.role == BridgeRole::SwitchUpstream) {
          Switch s;
          s.bdf = bdf(pi.address);
          collect(c, s);
          into.switches.push_back(std::move(s));
        } else {
          collect(c, into); // root ports and downstream ports are transparent
        }
      } else if (x.kind == VertexKind::PciDevice) {
        Bdf b = bdf(x.as<PciInfo>()->address);
        bool isGpu = false, isNic = false, isNvme = false;
        for (VertexId f : t_.children(c)) {
          VertexKind k = t_.vertex(f).kind;
          isGpu |= k == VertexKind::Gpu;
          isNic |= k == VertexKind::Nic;
          isNvme |= k == VertexKind::NvmeController;
        }
        (isGpu ? into.gpus : isNic ? into.nics : isNvme ? into.nvme : into.other).push_back(b);
        collect(c, into); // functions behind a device (rare: bridges under endpoints)
      }
    }
  }

  Gpu gpuDoc(const GpuRef &ref) {
    const GpuInfo &g = *ref.info;
    Gpu d;
    d.pci = bdf(g.pci);
    if (VertexId f = t_.pciFunctionOf(ref.vertex); f != NoVertex) {
      const PciInfo &pi = *t_.vertex(f).as<PciInfo>();
      d.pci_id = formatPciId(pi.vendorId, pi.deviceId);
    }
    d.vendor = g.vendor;
    d.model = g.model;
    if (g.smCount)
      d.sm_count = g.smCount;
    if (g.memoryBytes)
      d.memory_bytes = g.memoryBytes;
    if (g.ccMajor >= 0)
      d.compute_capability = std::to_string(g.ccMajor) + "." + std::to_string(std::max(g.ccMinor, 0));
    d.mig = g.mig == MigMode::Enabled ? "enabled" : g.mig == MigMode::Disabled ? "disabled" : "";
    d.green_contexts = g.greenContexts;
    d.temperature_mc = g.temperatureMilliC;
    d.names = g.aliases;
    return d;
  }

  Nic nicDoc(VertexId pci) {
    const PciInfo &pi = *t_.vertex(pci).as<PciInfo>();
    Nic d;
    d.pci = bdf(pi.address);
    d.pci_id = formatPciId(pi.vendorId, pi.deviceId);
    for (VertexId c : t_.children(pci)) {
      const Vertex &x = t_.vertex(c);
      if (x.kind == VertexKind::NetDevice)
        d.netdevs.push_back(x.name);
      if (x.kind == VertexKind::RdmaDevice && d.rdma.empty()) {
        d.rdma = x.name;
        d.max_qp = x.as<RdmaInfo>()->maxQueuePairs;
        for (const RdmaPort &p : x.as<RdmaInfo>()->ports)
          d.ports.push_back(Port{p.number, p.state, p.linkLayer, p.rateGbps});
      }
    }
    return d;
  }

  Nvme nvmeDoc(VertexId ctl) {
    const NvmeControllerInfo &info = *t_.vertex(ctl).as<NvmeControllerInfo>();
    Nvme d;
    d.pci = bdf(info.pci);
    if (VertexId f = t_.pciFunctionOf(ctl); f != NoVertex) {
      const PciInfo &pi = *t_.vertex(f).as<PciInfo>();
      d.pci_id = formatPciId(pi.vendorId, pi.deviceId);
    }
    d.controller = t_.vertex(ctl).name;
    d.model = info.model;
    d.queue_count = info.queueCount;
    d.queue_depth = info.queueDepth;
    for (VertexId c : t_.children(ctl)) {
      if (t_.vertex(c).kind != VertexKind::NvmeNamespace)
        continue;
      Namespace ns;
      ns.name = t_.vertex(c).name;
      ns.size_bytes = t_.vertex(c).as<BlockInfo>()->sizeBytes;
      for (VertexId p : t_.children(c))
        if (t_.vertex(p).kind == VertexKind::NvmePartition)
          ns.partitions.push_back(t_.vertex(p).name);
      d.namespaces.push_back(std::move(ns));
    }
    return d;
  }

  const Topology &t_;
};

std::string emit(File &file) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::yaml::Output yout(os, nullptr, /*WrapColumn=*/100);
  yout << file;
  return out;
}

} // namespace

std::string writeTopologyYaml(const Topology &topology) {
  File file;
  file.node = Exporter(topology).run();
  return emit(file);
}

std::string writeClusterYaml(const Cluster &cluster) {
  File file;
  file.cluster = cluster.name;
  for (const Topology &t : cluster.nodes)
    file.nodes.push_back(Exporter(t).run());
  return emit(file);
}

// Computed once per indexed topology: lowering asks for it for every plan of the node.
uint64_t Topology::fingerprint() const {
  if (!fingerprint_)
    fingerprint_ = fnv1a64(writeTopologyYaml(*this));
  return *fingerprint_;
}

} // namespace msc::hal
