// The mapping of the YAML topology document to keys and scalars (LLVM YAML I/O traits): which keys
// each struct has, which are optional, and how PCI addresses and CPU lists are parsed and printed.
#include "hal/detail/TopologyYamlDocument.h"

#include "support/CpuList.h"

#include <llvm/Support/raw_ostream.h>

using namespace msc::hal::doc;

namespace llvm::yaml {

static ParseContext *ctxOf(void *p) { return static_cast<ParseContext *>(p); }

void ScalarTraits<U64>::output(const U64 &v, void *c, raw_ostream &os) { ScalarTraits<uint64_t>::output(v.v, c, os); }
StringRef ScalarTraits<U64>::input(StringRef s, void *c, U64 &v) { return ScalarTraits<uint64_t>::input(s, c, v.v); }

void ScalarTraits<Bdf>::output(const Bdf &v, void *, raw_ostream &os) { os << v.addr.str(); }
StringRef ScalarTraits<Bdf>::input(StringRef s, void *ctx, Bdf &v) {
  std::string why;
  auto parsed = msc::parsePci(s, &why);
  if (parsed && parsed->form == msc::ParsedPci::Form::BusOnly)
    why = "expected a full address DDDD:BB:DD.F, not a bus", parsed.reset();
  if (!parsed) {
    if (ParseContext *c = ctxOf(ctx))
      *c = ParseContext{ParseContext::Failure::Pci, s.str(), why};
    return "invalid PCI address";
  }
  v.addr = parsed->address;
  v.loc = SMLoc::getFromPointer(s.data());
  v.len = s.size();
  return {};
}

void ScalarTraits<DomainBus>::output(const DomainBus &v, void *, raw_ostream &os) { os << v.bus.str(); }
StringRef ScalarTraits<DomainBus>::input(StringRef s, void *ctx, DomainBus &v) {
  std::string why;
  auto parsed = msc::parsePci(s, &why);
  if (parsed && parsed->form != msc::ParsedPci::Form::BusOnly)
    why = "expected a PCIe domain and bus DDDD:BB", parsed.reset();
  if (!parsed) {
    if (ParseContext *c = ctxOf(ctx))
      *c = ParseContext{ParseContext::Failure::Pci, s.str(), why};
    return "invalid PCI address";
  }
  v.bus = msc::PciBus{parsed->address.domain, parsed->address.bus};
  v.loc = SMLoc::getFromPointer(s.data());
  v.len = s.size();
  return {};
}

void ScalarTraits<CpuList>::output(const CpuList &v, void *, raw_ostream &os) { os << msc::formatCpuList(v.cpus); }
StringRef ScalarTraits<CpuList>::input(StringRef s, void *ctx, CpuList &v) {
  std::string why;
  auto cpus = msc::parseCpuList(s, &why);
  // Checked apart, not by resetting `cpus`: GCC 12 then wrongly warns the vector may be uninitialized.
  bool tooLarge = cpus && !cpus->empty() && cpus->back() >= (1u << 16);
  if (tooLarge)
    why = "CPU numbers above 65535 are not supported";
  if (!cpus || tooLarge) {
    if (ParseContext *c = ctxOf(ctx))
      *c = ParseContext{ParseContext::Failure::CpuList, s.str(), why};
    return "invalid CPU list";
  }
  v.cpus = std::move(*cpus);
  v.loc = SMLoc::getFromPointer(s.data());
  v.len = s.size();
  return {};
}

void MappingTraits<Hugepages>::mapping(IO &io, Hugepages &h) {
  io.mapRequired("page_size", h.page_size);
  io.mapRequired("total", h.total);
  io.mapOptional("free", h.free);
}
void MappingTraits<Numa>::mapping(IO &io, Numa &n) {
  io.mapRequired("id", n.id);
  io.mapOptional("memory_bytes", n.memory_bytes, uint64_t(0));
  io.mapOptional("cpus", n.cpus);
  io.mapOptional("subtype", n.subtype, std::string());
  io.mapOptional("distances", n.distances);
  io.mapOptional("hugepages", n.hugepages);
}
void MappingTraits<Package>::mapping(IO &io, Package &p) {
  io.mapRequired("id", p.id);
  io.mapRequired("cpus", p.cpus);
}
template <typename T> static void mapDevices(IO &io, T &d) {
  io.mapOptional("gpus", d.gpus);
  io.mapOptional("nics", d.nics);
  io.mapOptional("nvme", d.nvme);
  io.mapOptional("other", d.other);
  io.mapOptional("switches", d.switches);
}
void MappingTraits<Switch>::mapping(IO &io, Switch &s) {
  io.mapRequired("switch", s.bdf);
  mapDevices(io, s);
}
void MappingTraits<Domain>::mapping(IO &io, Domain &d) {
  io.mapRequired("domain", d.domain);
  io.mapOptional("numa_node", d.numa_node);
  mapDevices(io, d);
}
void MappingTraits<Section>::mapping(IO &io, Section &s) { io.mapOptional("pcie_domains", s.pcie_domains); }
void MappingTraits<Gpu>::mapping(IO &io, Gpu &g) {
  io.mapRequired("pci", g.pci);
  io.mapOptional("pci_id", g.pci_id, std::string());
  io.mapOptional("vendor", g.vendor, std::string());
  io.mapOptional("model", g.model, std::string());
  io.mapOptional("sm_count", g.sm_count);
  io.mapOptional("memory_bytes", g.memory_bytes);
  io.mapOptional("compute_capability", g.compute_capability, std::string());
  io.mapOptional("mig", g.mig, std::string());
  io.mapOptional("green_contexts", g.green_contexts);
  io.mapOptional("temperature_mc", g.temperature_mc);
  io.mapOptional("names", g.names);
}
void MappingTraits<Port>::mapping(IO &io, Port &p) {
  io.mapRequired("port", p.port);
  io.mapOptional("state", p.state, std::string());
  io.mapOptional("link_layer", p.link_layer, std::string());
  io.mapOptional("rate_gbps", p.rate_gbps, 0.0);
}
void MappingTraits<Nic>::mapping(IO &io, Nic &n) {
  io.mapRequired("pci", n.pci);
  io.mapOptional("pci_id", n.pci_id, std::string());
  io.mapOptional("netdevs", n.netdevs);
  io.mapOptional("rdma", n.rdma, std::string());
  io.mapOptional("max_qp", n.max_qp);
  io.mapOptional("ports", n.ports);
}
void MappingTraits<Namespace>::mapping(IO &io, Namespace &n) {
  io.mapRequired("name", n.name);
  io.mapOptional("size_bytes", n.size_bytes, uint64_t(0));
  io.mapOptional("partitions", n.partitions);
}
void MappingTraits<Nvme>::mapping(IO &io, Nvme &n) {
  io.mapRequired("pci", n.pci);
  io.mapOptional("pci_id", n.pci_id, std::string());
  io.mapOptional("controller", n.controller, std::string());
  io.mapOptional("model", n.model, std::string());
  io.mapOptional("queue_count", n.queue_count);
  io.mapOptional("queue_depth", n.queue_depth);
  io.mapOptional("namespaces", n.namespaces);
}
void MappingTraits<Thermal>::mapping(IO &io, Thermal &t) {
  io.mapRequired("name", t.name);
  io.mapRequired("temp_mc", t.temp_mc);
  io.mapOptional("limit_mc", t.limit_mc);
}
void MappingTraits<NvLink>::mapping(IO &io, NvLink &l) {
  io.mapRequired("a", l.a);
  io.mapRequired("b", l.b);
  io.mapRequired("links", l.links);
}
static void mapNode(IO &io, NodeDoc &n) {
  io.mapOptional("name", n.name, std::string());
  io.mapOptional("kernel_cmdline", n.kernel_cmdline, std::string());
  io.mapOptional("offline_cpus", n.offline_cpus, std::string());
  io.mapOptional("packages", n.packages);
  io.mapOptional("numa_nodes", n.numa_nodes);
  io.mapOptional("cores", n.cores);
  if (!io.outputting() || !n.topology.pcie_domains.empty())
    io.mapOptional("topology", n.topology);
  io.mapOptional("gpus", n.gpus);
  io.mapOptional("nics", n.nics);
  io.mapOptional("nvme", n.nvme);
  io.mapOptional("thermal", n.thermal);
  io.mapOptional("nvlinks", n.nvlinks);
}
void MappingTraits<NodeDoc>::mapping(IO &io, NodeDoc &n) { mapNode(io, n); }
void MappingTraits<File>::mapping(IO &io, File &f) {
  io.mapOptional("cluster", f.cluster, std::string());
  io.mapOptional("nodes", f.nodes);
  mapNode(io, f.node);
}

} // namespace llvm::yaml
