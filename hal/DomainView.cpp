#include "hal/DomainView.h"

#include "support/CpuList.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <set>

namespace msc::hal {

PciBus domainOfHostBridge(const Topology &t, VertexId hostBridge) {
  const HostBridgeInfo *h = t.vertex(hostBridge).as<HostBridgeInfo>();
  return h ? PciBus{h->domain, h->firstBus} : PciBus{};
}

std::optional<PciBus> pcieDomainOf(const Topology &t, VertexId device) {
  if (device == NoVertex)
    return std::nullopt;
  VertexId hb = t.rootComplexOf(device);
  if (hb == NoVertex)
    return std::nullopt;
  return domainOfHostBridge(t, hb);
}

namespace {

std::vector<VertexId> sortedHostBridges(const Topology &t) {
  std::vector<VertexId> hbs = t.verticesOf(VertexKind::HostBridge);
  std::stable_sort(hbs.begin(), hbs.end(), [&](VertexId a, VertexId b) {
    return domainOfHostBridge(t, a) < domainOfHostBridge(t, b);
  });
  return hbs;
}

std::string size(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 5)
    v /= 1024, ++u;
  return llvm::formatv("{0:f1} {1}", v, units[u]).str();
}

// Names of the vertices of `kind` that belong to PCI function `function`, in name order.
std::vector<std::string> namesUnder(const Topology &t, VertexKind kind, VertexId function) {
  std::vector<std::string> out;
  for (VertexId v : t.verticesOf(kind))
    if (t.pciFunctionOf(v) == function && !t.vertex(v).name.empty())
      out.push_back(t.vertex(v).name);
  llvm::sort(out, [](const std::string &a, const std::string &b) { return llvm::StringRef(a).compare_numeric(b) < 0; });
  return out;
}

// One device line: a short name, its PCI address, what it is, its links to the domain's GPUs.
struct Line {
  std::string name, pci, what;
  VertexId vertex = NoVertex;
};

// "PIX to GPU 0; NV6 to GPUs 1-3,5": how `v` reaches each GPU of its domain (itself excluded), and
// its NVLink peers wherever they are, grouped by link class (a DGX-2 GPU has fifteen NV6 peers).
std::string linksToGpus(const Topology &t, VertexId v, const std::vector<GpuRef> &domainGpus) {
  std::vector<std::pair<std::string, std::vector<unsigned>>> byLink;
  for (const GpuRef &g : t.gpus()) {
    if (g.vertex == v)
      continue;
    bool local = llvm::any_of(domainGpus, [&](const GpuRef &d) { return d.vertex == g.vertex; });
    LinkClass link = t.linkClass(v, g.vertex);
    if (!local && link.kind != LinkClass::NvLink)
      continue;
    auto it = llvm::find_if(byLink, [&](const auto &entry) { return entry.first == link.str(); });
    if (it == byLink.end())
      it = byLink.insert(byLink.end(), {link.str(), {}});
    it->second.push_back(g.index);
  }
  std::vector<std::string> out;
  for (const auto &[link, indexes] : byLink)
    out.push_back(link + (indexes.size() == 1 ? " to GPU " : " to GPUs ") + formatCpuList(indexes));
  return llvm::join(out, "; ");
}

std::string rdmaPorts(const Topology &t, VertexId function) {
  std::vector<std::string> ports;
  for (VertexId v : t.verticesOf(VertexKind::RdmaDevice)) {
    if (t.pciFunctionOf(v) != function)
      continue;
    for (const RdmaPort &p : t.vertex(v).as<RdmaInfo>()->ports) {
      std::string port = "port " + std::to_string(p.number) + " " + (p.state.empty() ? "state unknown" : p.state);
      if (!p.linkLayer.empty())
        port += " " + p.linkLayer;
      if (p.rateGbps > 0)
        port += llvm::formatv(" {0} Gb/s", p.rateGbps).str();
      ports.push_back(port);
    }
  }
  return llvm::join(ports, ", ");
}

} // namespace

std::vector<PciBus> pcieDomains(const Topology &t) {
  std::vector<PciBus> out;
  for (VertexId hb : sortedHostBridges(t))
    out.push_back(domainOfHostBridge(t, hb));
  return out;
}

void printDomains(const Topology &t, llvm::StringRef node, llvm::raw_ostream &os, const DomainViewOptions &options) {
  std::vector<VertexId> hbs = sortedHostBridges(t);
  std::vector<GpuRef> gpus = t.gpus();
  os << "node " << node << ": " << hbs.size() << " PCIe domain(s), " << gpus.size() << " GPU(s), "
     << t.count(VertexKind::RdmaDevice) << " RDMA device(s), " << t.count(VertexKind::NvmeController)
     << " NVMe controller(s)\n";
  for (VertexId hb : hbs) {
    PciBus domain = domainOfHostBridge(t, hb);
    os << "  domain " << domain.str();
    if (std::optional<unsigned> numa = t.numaNodeOfDevice(hb))
      os << "  NUMA " << *numa;
    if (auto it = options.remarks.find(domain); it != options.remarks.end())
      os << "  " << it->second;
    os << "\n";

    std::vector<GpuRef> local;
    for (const GpuRef &g : gpus)
      if (t.rootComplexOf(g.vertex) == hb)
        local.push_back(g);
    std::vector<Line> lines;
    std::set<VertexId> shown; // PCI functions with a line of their own
    for (const GpuRef &g : local) {
      std::string what = (g.info->vendor.empty() ? "" : g.info->vendor + " ") +
                         (g.info->model.empty() ? std::string("(model unknown)") : g.info->model);
      if (g.info->smCount)
        what += ", " + std::to_string(g.info->smCount) + " SMs";
      if (g.info->memoryBytes)
        what += ", " + size(g.info->memoryBytes);
      lines.push_back({"GPU " + std::to_string(g.index), g.info->pci.str(), what, g.vertex});
      shown.insert(t.pciFunctionOf(g.vertex));
    }
    std::vector<VertexId> nics;
    for (VertexId v : t.verticesOf(VertexKind::Nic))
      if (t.rootComplexOf(v) == hb)
        nics.push_back(t.pciFunctionOf(v));
    for (VertexId v : t.verticesOf(VertexKind::RdmaDevice))
      if (t.rootComplexOf(v) == hb && !llvm::is_contained(nics, t.pciFunctionOf(v)))
        nics.push_back(t.pciFunctionOf(v));
    llvm::sort(nics, [&](VertexId a, VertexId b) {
      return t.vertex(a).as<PciInfo>()->address < t.vertex(b).as<PciInfo>()->address;
    });
    for (VertexId fn : nics) {
      if (fn == NoVertex || !shown.insert(fn).second)
        continue;
      std::vector<std::string> rdma = namesUnder(t, VertexKind::RdmaDevice, fn);
      std::vector<std::string> net = namesUnder(t, VertexKind::NetDevice, fn);
      // The line is named after its RDMA device when it has one ("mlx5_0"), after nothing else.
      std::string what = rdma.empty() ? std::string() : "RDMA";
      if (rdma.size() > 1)
        what += " " + llvm::join(rdma, ", ");
      if (std::string ports = rdmaPorts(t, fn); !ports.empty())
        what += " " + ports;
      if (!net.empty())
        what += (what.empty() ? "" : "; ") + std::string("netdev ") + llvm::join(net, ", ");
      if (what.empty())
        what = "network function";
      VertexId linkFrom = fn;
      for (VertexId v : t.verticesOf(VertexKind::RdmaDevice))
        if (t.pciFunctionOf(v) == fn)
          linkFrom = v;
      lines.push_back({rdma.empty() ? "NIC" : rdma.front(), t.vertex(fn).as<PciInfo>()->address.str(), what, linkFrom});
    }
    for (VertexId v : t.verticesOf(VertexKind::NvmeController)) {
      if (t.rootComplexOf(v) != hb)
        continue;
      const NvmeControllerInfo &info = *t.vertex(v).as<NvmeControllerInfo>();
      std::vector<std::string> namespaces;
      for (VertexId c : t.children(v))
        if (t.vertex(c).kind == VertexKind::NvmeNamespace) {
          uint64_t bytes = t.vertex(c).as<BlockInfo>() ? t.vertex(c).as<BlockInfo>()->sizeBytes : 0;
          namespaces.push_back(t.vertex(c).name + (bytes ? " (" + size(bytes) + ")" : ""));
        }
      std::string what = "NVMe" + (info.model.empty() ? std::string() : " " + info.model);
      if (!namespaces.empty())
        what += "; " + llvm::join(namespaces, ", ");
      lines.push_back({t.vertex(v).name.empty() ? "NVMe" : t.vertex(v).name, info.pci.str(), what, v});
      shown.insert(t.pciFunctionOf(v));
    }
    // The rest of the domain's functions (storage controllers, VGA, bridges' endpoints) are counted:
    // jobs do not bind them, but reserving a domain takes them out of reach too.
    unsigned others = 0;
    for (VertexId v : t.verticesOf(VertexKind::PciDevice))
      if (t.rootComplexOf(v) == hb && !shown.count(v))
        ++others;

    size_t width = 0;
    for (const Line &l : lines)
      width = std::max(width, l.name.size());
    for (const Line &l : lines) {
      os << "    " << l.name << std::string(width - l.name.size() + 2, ' ') << l.pci << "  " << l.what;
      if (std::string links = linksToGpus(t, l.vertex, local); !links.empty())
        os << "; " << links;
      os << "\n";
    }
    std::string rest = others ? std::to_string(others) + " other PCI function(s)" : std::string();
    if (lines.empty())
      os << "    no GPU, NIC or NVMe" << (rest.empty() ? "" : "; " + rest) << "\n";
    else if (!rest.empty())
      os << "    and " << rest << "\n";
  }
}

} // namespace msc::hal
