// YAML topology documents <-> Topology, through LLVM YAML I/O. The document structs mirror the
// file; building the graph from them (and back) is done by hand below, so the file format stays
// readable and the graph stays typed.
#include "hal/TopologyYaml.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/YAMLTraits.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <map>
#include <set>

namespace msc::hal {
namespace doc {

// Scalars that remember where they were in the input, for diagnostics after parsing.
struct Bdf {
  PciAddress addr;
  llvm::SMLoc loc;
  size_t len = 0;
};
struct DomainBus {
  PciBus bus;
  llvm::SMLoc loc;
  size_t len = 0;
};
struct CpuList {
  std::vector<unsigned> cpus;
  llvm::SMLoc loc;
  size_t len = 0;
};

struct U64 {
  uint64_t v = 0;
};
struct Hugepages {
  uint64_t page_size = 0, total = 0;
  std::optional<uint64_t> free;
};
struct Numa {
  unsigned id = 0;
  uint64_t memory_bytes = 0;
  CpuList cpus;
  std::string subtype;
  std::vector<U64> distances;
  std::vector<Hugepages> hugepages;
};
struct Package {
  unsigned id = 0;
  CpuList cpus;
};
struct Switch {
  Bdf bdf;
  std::vector<Bdf> gpus, nics, nvme, other;
  std::vector<Switch> switches;
};
struct Domain {
  DomainBus domain;
  std::optional<int> numa_node;
  std::vector<Bdf> gpus, nics, nvme, other;
  std::vector<Switch> switches;
};
struct Section {
  std::vector<Domain> pcie_domains;
};
struct Gpu {
  Bdf pci;
  std::string pci_id, vendor, model, compute_capability, mig;
  std::optional<unsigned> sm_count;
  std::optional<uint64_t> memory_bytes;
  std::optional<bool> green_contexts;
  std::optional<int64_t> temperature_mc;
  std::vector<std::string> names;
};
struct Port {
  unsigned port = 0;
  std::string state, link_layer;
  double rate_gbps = 0;
};
struct Nic {
  Bdf pci;
  std::string pci_id, rdma;
  std::optional<unsigned> max_qp;
  std::vector<std::string> netdevs;
  std::vector<Port> ports;
};
struct Namespace {
  std::string name;
  uint64_t size_bytes = 0;
  std::vector<std::string> partitions;
};
struct Nvme {
  Bdf pci;
  std::string pci_id, controller, model;
  std::optional<unsigned> queue_count, queue_depth;
  std::vector<Namespace> namespaces;
};
struct Thermal {
  std::string name;
  int64_t temp_mc = 0;
  std::optional<int64_t> limit_mc;
};
struct NvLink {
  Bdf a, b;
  unsigned links = 1;
};
struct NodeDoc {
  std::string name, kernel_cmdline;
  std::string offline_cpus; // kernel CPU-list syntax; PUs that exist but are offline
  std::vector<Package> packages;
  std::vector<Numa> numa_nodes;
  std::vector<CpuList> cores;
  Section topology;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  std::vector<Nvme> nvme;
  std::vector<Thermal> thermal;
  std::vector<NvLink> nvlinks;
};
struct File {
  std::string cluster;
  std::vector<NodeDoc> nodes;
  NodeDoc node;
};

// Which scalar failed, so the diagnostic handler can pick the code.
struct ParseContext {
  enum class Failure { None, Pci, CpuList } failure = Failure::None;
  std::string text, why;
};

} // namespace doc
} // namespace msc::hal

using namespace msc::hal::doc;
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(Bdf)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(CpuList)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(U64)
LLVM_YAML_IS_SEQUENCE_VECTOR(Hugepages)
LLVM_YAML_IS_SEQUENCE_VECTOR(Numa)
LLVM_YAML_IS_SEQUENCE_VECTOR(Package)
LLVM_YAML_IS_SEQUENCE_VECTOR(Switch)
LLVM_YAML_IS_SEQUENCE_VECTOR(Domain)
LLVM_YAML_IS_SEQUENCE_VECTOR(Gpu)
LLVM_YAML_IS_SEQUENCE_VECTOR(Port)
LLVM_YAML_IS_SEQUENCE_VECTOR(Nic)
LLVM_YAML_IS_SEQUENCE_VECTOR(Namespace)
LLVM_YAML_IS_SEQUENCE_VECTOR(Nvme)
LLVM_YAML_IS_SEQUENCE_VECTOR(Thermal)
LLVM_YAML_IS_SEQUENCE_VECTOR(NvLink)
LLVM_YAML_IS_SEQUENCE_VECTOR(NodeDoc)

namespace llvm::yaml {

static ParseContext *ctxOf(void *p) { return static_cast<ParseContext *>(p); }

template <> struct ScalarTraits<U64> {
  static void output(const U64 &v, void *c, raw_ostream &os) { ScalarTraits<uint64_t>::output(v.v, c, os); }
  static StringRef input(StringRef s, void *c, U64 &v) { return ScalarTraits<uint64_t>::input(s, c, v.v); }
  static QuotingType mustQuote(StringRef) { return QuotingType::None; }
};

template <> struct ScalarTraits<Bdf> {
  static void output(const Bdf &v, void *, raw_ostream &os) { os << v.addr.str(); }
  static StringRef input(StringRef s, void *ctx, Bdf &v) {
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
  static QuotingType mustQuote(StringRef) { return QuotingType::Double; }
};

template <> struct ScalarTraits<DomainBus> {
  static void output(const DomainBus &v, void *, raw_ostream &os) { os << v.bus.str(); }
  static StringRef input(StringRef s, void *ctx, DomainBus &v) {
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
  static QuotingType mustQuote(StringRef) { return QuotingType::Double; }
};

template <> struct ScalarTraits<CpuList> {
  static void output(const CpuList &v, void *, raw_ostream &os) { os << msc::hal::formatCpuList(v.cpus); }
  static StringRef input(StringRef s, void *ctx, CpuList &v) {
    std::string why;
    auto cpus = msc::hal::parseCpuList(s, &why);
    if (cpus && !cpus->empty() && cpus->back() >= (1u << 16))
      why = "CPU numbers above 65535 are not supported", cpus.reset();
    if (!cpus) {
      if (ParseContext *c = ctxOf(ctx))
        *c = ParseContext{ParseContext::Failure::CpuList, s.str(), why};
      return "invalid CPU list";
    }
    v.cpus = std::move(*cpus);
    v.loc = SMLoc::getFromPointer(s.data());
    v.len = s.size();
    return {};
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::Double; }
};

template <> struct MappingTraits<Hugepages> {
  static void mapping(IO &io, Hugepages &h) {
    io.mapRequired("page_size", h.page_size);
    io.mapRequired("total", h.total);
    io.mapOptional("free", h.free);
  }
};
template <> struct MappingTraits<Numa> {
  static void mapping(IO &io, Numa &n) {
    io.mapRequired("id", n.id);
    io.mapOptional("memory_bytes", n.memory_bytes, uint64_t(0));
    io.mapOptional("cpus", n.cpus);
    io.mapOptional("subtype", n.subtype, std::string());
    io.mapOptional("distances", n.distances);
    io.mapOptional("hugepages", n.hugepages);
  }
};
template <> struct MappingTraits<Package> {
  static void mapping(IO &io, Package &p) {
    io.mapRequired("id", p.id);
    io.mapRequired("cpus", p.cpus);
  }
};
template <typename T> static void mapDevices(IO &io, T &d) {
  io.mapOptional("gpus", d.gpus);
  io.mapOptional("nics", d.nics);
  io.mapOptional("nvme", d.nvme);
  io.mapOptional("other", d.other);
  io.mapOptional("switches", d.switches);
}
template <> struct MappingTraits<Switch> {
  static void mapping(IO &io, Switch &s) {
    io.mapRequired("switch", s.bdf);
    mapDevices(io, s);
  }
};
template <> struct MappingTraits<Domain> {
  static void mapping(IO &io, Domain &d) {
    io.mapRequired("domain", d.domain);
    io.mapOptional("numa_node", d.numa_node);
    mapDevices(io, d);
  }
};
template <> struct MappingTraits<Section> {
  static void mapping(IO &io, Section &s) { io.mapOptional("pcie_domains", s.pcie_domains); }
};
template <> struct MappingTraits<Gpu> {
  static void mapping(IO &io, Gpu &g) {
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
};
template <> struct MappingTraits<Port> {
  static void mapping(IO &io, Port &p) {
    io.mapRequired("port", p.port);
    io.mapOptional("state", p.state, std::string());
    io.mapOptional("link_layer", p.link_layer, std::string());
    io.mapOptional("rate_gbps", p.rate_gbps, 0.0);
  }
};
template <> struct MappingTraits<Nic> {
  static void mapping(IO &io, Nic &n) {
    io.mapRequired("pci", n.pci);
    io.mapOptional("pci_id", n.pci_id, std::string());
    io.mapOptional("netdevs", n.netdevs);
    io.mapOptional("rdma", n.rdma, std::string());
    io.mapOptional("max_qp", n.max_qp);
    io.mapOptional("ports", n.ports);
  }
};
template <> struct MappingTraits<Namespace> {
  static void mapping(IO &io, Namespace &n) {
    io.mapRequired("name", n.name);
    io.mapOptional("size_bytes", n.size_bytes, uint64_t(0));
    io.mapOptional("partitions", n.partitions);
  }
};
template <> struct MappingTraits<Nvme> {
  static void mapping(IO &io, Nvme &n) {
    io.mapRequired("pci", n.pci);
    io.mapOptional("pci_id", n.pci_id, std::string());
    io.mapOptional("controller", n.controller, std::string());
    io.mapOptional("model", n.model, std::string());
    io.mapOptional("queue_count", n.queue_count);
    io.mapOptional("queue_depth", n.queue_depth);
    io.mapOptional("namespaces", n.namespaces);
  }
};
template <> struct MappingTraits<Thermal> {
  static void mapping(IO &io, Thermal &t) {
    io.mapRequired("name", t.name);
    io.mapRequired("temp_mc", t.temp_mc);
    io.mapOptional("limit_mc", t.limit_mc);
  }
};
template <> struct MappingTraits<NvLink> {
  static void mapping(IO &io, NvLink &l) {
    io.mapRequired("a", l.a);
    io.mapRequired("b", l.b);
    io.mapRequired("links", l.links);
  }
};
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
template <> struct MappingTraits<NodeDoc> {
  static void mapping(IO &io, NodeDoc &n) { mapNode(io, n); }
};
template <> struct MappingTraits<File> {
  static void mapping(IO &io, File &f) {
    io.mapOptional("cluster", f.cluster, std::string());
    io.mapOptional("nodes", f.nodes);
    mapNode(io, f.node);
  }
};

} // namespace llvm::yaml

namespace msc::hal {
namespace {

// Where a scalar was, as a diagnostic location: a range when the engine has a SourceMgr holding
// the text, else file and line.
class SourceText {
public:
  SourceText(llvm::StringRef text, llvm::StringRef file, DiagnosticEngine &diags) : file_(file.str()) {
    if (llvm::SourceMgr *sm = diags.sourceMgr()) {
      auto buf = llvm::MemoryBuffer::getMemBufferCopy(text, file);
      text_ = buf->getBuffer();
      sm->AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
      inSm_ = true;
    } else {
      text_ = text;
    }
  }
  llvm::StringRef text() const { return text_; }
  Location loc(llvm::SMLoc at, size_t len = 0) const {
    const char *p = at.getPointer();
    if (!p || p < text_.begin() || p > text_.end())
      return Location{{}, file_, 0};
    if (inSm_)
      return Location{llvm::SMRange(at, llvm::SMLoc::getFromPointer(p + len)), {}, 0};
    return Location{{}, file_, 1 + unsigned(llvm::StringRef(text_.begin(), p - text_.begin()).count('\n'))};
  }

private:
  std::string file_;
  llvm::StringRef text_;
  bool inSm_ = false;
};

struct YamlDiagState {
  const SourceText *src;
  DiagnosticEngine *diags;
  ParseContext *ctx;
};

void yamlDiagHandler(const llvm::SMDiagnostic &d, void *p) {
  auto *s = static_cast<YamlDiagState *>(p);
  if (d.getKind() != llvm::SourceMgr::DK_Error)
    return;
  Location loc = s->src->loc(d.getLoc());
  switch (s->ctx->failure) {
  case ParseContext::Failure::Pci:
    s->diags->report(DiagCode::ERR_HAL_TOPO_005, loc) << s->ctx->text << s->ctx->why;
    break;
  case ParseContext::Failure::CpuList:
    s->diags->report(DiagCode::ERR_HAL_TOPO_008, loc) << s->ctx->text << s->ctx->why;
    break;
  case ParseContext::Failure::None:
    s->diags->report(DiagCode::ERR_HAL_TOPO_004, loc) << d.getMessage().str();
    break;
  }
  s->ctx->failure = ParseContext::Failure::None;
}

// LLVM's YAML parser recurses on nesting; refuse pathological depth before it does.
std::optional<std::string> tooDeep(llvm::StringRef text) {
  unsigned depth = 0;
  for (char c : text) {
    if (c == '[' || c == '{') {
      if (++depth > 64)
        return std::string("nesting deeper than 64 levels");
    } else if ((c == ']' || c == '}') && depth) {
      --depth;
    }
  }
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    size_t indent = 0;
    while (lineStart + indent < text.size() && (text[lineStart + indent] == ' ' || text[lineStart + indent] == '-'))
      ++indent;
    if (indent > 256)
      return std::string("indentation deeper than 256 columns");
    size_t nl = text.find('\n', lineStart);
    if (nl == llvm::StringRef::npos)
      break;
    lineStart = nl + 1;
  }
  return std::nullopt;
}

std::optional<File> parseFile(const SourceText &src, DiagnosticEngine &diags) {
  if (auto why = tooDeep(src.text())) {
    diags.report(DiagCode::ERR_HAL_TOPO_004, src.loc(llvm::SMLoc::getFromPointer(src.text().begin()))) << *why;
    return std::nullopt;
  }
  ParseContext ctx;
  YamlDiagState state{&src, &diags, &ctx};
  unsigned before = diags.errorCount();
  File file;
  llvm::yaml::Input in(src.text(), &ctx, yamlDiagHandler, &state);
  in >> file;
  if (in.error() || diags.errorCount() != before) {
    if (diags.errorCount() == before)
      diags.report(DiagCode::ERR_HAL_TOPO_004, src.loc(llvm::SMLoc::getFromPointer(src.text().begin())))
          << in.error().message();
    return std::nullopt;
  }
  return file;
}

uint32_t parsePciId(llvm::StringRef id) {
  auto [v, d] = id.split(':');
  uint16_t vendor = 0, device = 0;
  if (v.getAsInteger(16, vendor) || d.getAsInteger(16, device))
    return 0;
  return (uint32_t(vendor) << 16) | device;
}

std::string formatPciId(uint16_t vendor, uint16_t device) {
  if (!vendor && !device)
    return "";
  char buf[16];
  snprintf(buf, sizeof buf, "%04x:%04x", vendor, device);
  return buf;
}

// --- document -> graph ----------------------------------------------------------------------

class Builder {
public:
  Builder(const NodeDoc &node, const SourceText &src, DiagnosticEngine &diags) : n_(node), src_(src), diags_(diags) {}

  std::optional<Topology> build() {
    unsigned before = diags_.errorCount();
    t_.setName(n_.name);
    t_.setKernelCmdline(n_.kernel_cmdline);
    if (!n_.offline_cpus.empty()) {
      std::string why;
      std::optional<std::vector<unsigned>> offline = parseCpuList(n_.offline_cpus, &why);
      if (!offline) {
        diags_.report(DiagCode::ERR_HAL_TOPO_008, src_.loc(llvm::SMLoc())) << n_.offline_cpus << why;
        return std::nullopt;
      }
      offline_ = std::move(*offline);
    }
    Vertex machine;
    machine.kind = VertexKind::Machine;
    VertexId root = t_.addVertex(std::move(machine));
    cpus(root);
    pci(root);
    extras(root);
    if (diags_.errorCount() != before)
      return std::nullopt;
    t_.reindex();
    return std::move(t_);
  }

private:
  void cpus(VertexId root) {
    // NUMA nodes first: PUs take their locality from them.
    std::map<unsigned, int> puNuma;
    std::set<unsigned> numaIds;
    for (const Numa &nd : n_.numa_nodes) {
      if (!numaIds.insert(nd.id).second)
        diags_.report(DiagCode::ERR_HAL_TOPO_006, src_.loc(nd.cpus.loc)) << ("NUMA node " + std::to_string(nd.id));
      for (unsigned c : nd.cpus.cpus)
        puNuma.try_emplace(c, int(nd.id));
    }
    std::map<unsigned, unsigned> puPackage; // pu -> index in packages
    std::vector<VertexId> packages;
    for (size_t i = 0; i < n_.packages.size(); ++i) {
      const Package &p = n_.packages[i];
      Vertex v;
      v.kind = VertexKind::Package;
      v.osIndex = p.id;
      packages.push_back(t_.addVertex(std::move(v), root));
      for (unsigned c : p.cpus.cpus)
        if (!puPackage.try_emplace(c, unsigned(i)).second)
          diags_.report(DiagCode::ERR_HAL_TOPO_012, src_.loc(p.cpus.loc, p.cpus.len))
              << c << "in two packages";
    }
    auto containerOf = [&](const std::vector<unsigned> &cpus) {
      if (cpus.empty() || packages.empty())
        return root;
      auto first = puPackage.find(cpus.front());
      if (first == puPackage.end())
        return root;
      for (unsigned c : cpus) {
        auto it = puPackage.find(c);
        if (it == puPackage.end() || it->second != first->second)
          return root;
      }
      return packages[first->second];
    };
    std::vector<unsigned> order;
    for (const Numa &nd : n_.numa_nodes) {
      Vertex v;
      v.kind = VertexKind::NumaNode;
      v.osIndex = nd.id;
      NumaInfo info;
      info.memoryBytes = nd.memory_bytes;
      info.cpus = nd.cpus.cpus;
      info.subtype = nd.subtype;
      for (const Hugepages &h : nd.hugepages)
        info.hugepages.push_back(HugepagePool{h.page_size, h.total, h.free});
      v.data = std::move(info);
      t_.addVertex(std::move(v), containerOf(nd.cpus.cpus));
      order.push_back(nd.id);
    }
    bool anyDistances = llvm::any_of(n_.numa_nodes, [](const Numa &nd) { return !nd.distances.empty(); });
    if (anyDistances) {
      std::vector<uint64_t> matrix;
      for (const Numa &nd : n_.numa_nodes) {
        if (nd.distances.size() != n_.numa_nodes.size()) {
          diags_.report(DiagCode::ERR_HAL_TOPO_004, src_.loc(nd.cpus.loc))
              << ("NUMA node " + std::to_string(nd.id) + " has " + std::to_string(nd.distances.size()) +
                  " distances; expected one per NUMA node (" + std::to_string(n_.numa_nodes.size()) + ")");
          return;
        }
        for (const U64 &d : nd.distances)
          matrix.push_back(d.v);
      }
      t_.setNumaDistances(order, std::move(matrix));
    }
    // Cores: the listed SMT groups, then one core per remaining PU.
    std::set<unsigned> seen;
    std::vector<std::vector<unsigned>> cores;
    for (const CpuList &c : n_.cores) {
      for (unsigned pu : c.cpus)
        if (!seen.insert(pu).second)
          diags_.report(DiagCode::ERR_HAL_TOPO_012, src_.loc(c.loc, c.len)) << pu << "in two cores";
      if (!c.cpus.empty())
        cores.push_back(c.cpus);
    }
    std::set<unsigned> all;
    for (auto &[pu, _] : puNuma)
      all.insert(pu);
    for (auto &[pu, _] : puPackage)
      all.insert(pu);
    for (unsigned pu : all)
      if (!seen.count(pu))
        cores.push_back({pu});
    std::stable_sort(cores.begin(), cores.end(), [](auto &a, auto &b) { return a.front() < b.front(); });
    int64_t coreIndex = 0;
    for (const auto &core : cores) {
      Vertex cv;
      cv.kind = VertexKind::Core;
      cv.osIndex = coreIndex++;
      VertexId c = t_.addVertex(std::move(cv), containerOf(core));
      for (unsigned pu : core) {
        Vertex pv;
        pv.kind = VertexKind::Pu;
        pv.osIndex = pu;
        auto it = puNuma.find(pu);
        pv.numaNode = it == puNuma.end() ? -1 : it->second;
        pv.data = PuInfo{!llvm::is_contained(offline_, pu)};
        t_.addVertex(std::move(pv), c);
      }
    }
    numaIds_ = std::move(numaIds);
  }

  void pci(VertexId root) {
    for (const Gpu &g : n_.gpus)
      gpuDocs_.emplace(g.pci.addr, &g);
    for (const Nic &x : n_.nics)
      nicDocs_.emplace(x.pci.addr, &x);
    for (const Nvme &x : n_.nvme)
      nvmeDocs_.emplace(x.pci.addr, &x);
    for (const Domain &d : n_.topology.pcie_domains) {
      Vertex hb;
      hb.kind = VertexKind::HostBridge;
      hb.numaNode = d.numa_node.value_or(-1);
      if (d.numa_node && !numaIds_.count(unsigned(*d.numa_node)))
        diags_.report(DiagCode::ERR_HAL_TOPO_010, src_.loc(d.domain.loc, d.domain.len))
            << int64_t(*d.numa_node) << ("PCIe domain '" + d.domain.bus.str() + "'");
      hb.data = HostBridgeInfo{d.domain.bus.domain, d.domain.bus.bus, d.domain.bus.bus};
      VertexId v = t_.addVertex(std::move(hb), root);
      devices(d, v);
    }
    auto placedCheck = [&](const Bdf &b, const char *what) {
      if (!placed_.count(b.addr))
        diags_.report(DiagCode::ERR_HAL_TOPO_004, src_.loc(b.loc, b.len))
            << (std::string(what) + " '" + b.addr.str() + "' is not listed under topology.pcie_domains");
    };
    for (const Gpu &g : n_.gpus)
      placedCheck(g.pci, "gpu");
    for (const Nic &x : n_.nics)
      placedCheck(x.pci, "nic");
    for (const Nvme &x : n_.nvme)
      placedCheck(x.pci, "nvme");
  }

  template <typename T> void devices(const T &d, VertexId parent) {
    for (const Bdf &b : d.gpus)
      if (VertexId v = pciDevice(b, parent, 0x0302); v != NoVertex)
        gpu(b, v);
    for (const Bdf &b : d.nics)
      if (VertexId v = pciDevice(b, parent, 0x0200); v != NoVertex)
        nic(b, v);
    for (const Bdf &b : d.nvme)
      if (VertexId v = pciDevice(b, parent, 0x0108); v != NoVertex)
        nvme(b, v);
    for (const Bdf &b : d.other)
      pciDevice(b, parent, 0);
    for (const Switch &s : d.switches) {
      if (!checkUnique(s.bdf))
        continue;
      Vertex sw;
      sw.kind = VertexKind::PciBridge;
      PciInfo info;
      info.address = s.bdf.addr;
      info.classId = 0x0604;
      info.role = BridgeRole::SwitchUpstream;
      sw.data = info;
      devices(s, t_.addVertex(std::move(sw), parent, EdgeKind::PcieLink));
    }
  }

  bool checkUnique(const Bdf &b) {
    auto [it, inserted] = placed_.emplace(b.addr, b);
    if (!inserted) {
      // Report at the later of the two listings in the file, with a note at the earlier one.
      const Bdf &first = it->second.loc.getPointer() < b.loc.getPointer() ? it->second : b;
      const Bdf &second = &first == &b ? it->second : b;
      DiagBuilder d = diags_.report(DiagCode::ERR_HAL_TOPO_006, src_.loc(second.loc, second.len));
      d << b.addr.str();
      d.note(src_.loc(first.loc, first.len), "first listed here");
      return false;
    }
    return true;
  }

  VertexId pciDevice(const Bdf &b, VertexId parent, uint32_t classId) {
    if (!checkUnique(b))
      return NoVertex;
    Vertex v;
    v.kind = VertexKind::PciDevice;
    PciInfo info;
    info.address = b.addr;
    info.classId = classId;
    v.data = info;
    return t_.addVertex(std::move(v), parent, EdgeKind::PcieLink);
  }

  void setPciId(VertexId pci, llvm::StringRef id) {
    uint32_t ids = parsePciId(id);
    PciInfo &info = *t_.vertex(pci).as<PciInfo>();
    info.vendorId = uint16_t(ids >> 16);
    info.deviceId = uint16_t(ids & 0xffff);
  }

  void gpu(const Bdf &b, VertexId pci) {
    Vertex v;
    v.kind = VertexKind::Gpu;
    GpuInfo g;
    g.pci = b.addr;
    if (auto it = gpuDocs_.find(b.addr); it != gpuDocs_.end()) {
      const Gpu &d = *it->second;
      setPciId(pci, d.pci_id);
      g.vendor = d.vendor;
      g.model = d.model;
      g.smCount = d.sm_count.value_or(0);
      g.memoryBytes = d.memory_bytes.value_or(0);
      if (!d.compute_capability.empty()) {
        auto [maj, min] = llvm::StringRef(d.compute_capability).split('.');
        if (maj.getAsInteger(10, g.ccMajor) || min.getAsInteger(10, g.ccMinor))
          diags_.report(DiagCode::ERR_HAL_TOPO_004, src_.loc(d.pci.loc, d.pci.len))
              << ("compute_capability '" + d.compute_capability + "' is not MAJOR.MINOR");
      }
      g.mig = d.mig == "enabled" ? MigMode::Enabled : d.mig == "disabled" ? MigMode::Disabled : MigMode::Unknown;
      if (!d.mig.empty() && g.mig == MigMode::Unknown)
        diags_.report(DiagCode::ERR_HAL_TOPO_004, src_.loc(d.pci.loc, d.pci.len))
            << ("mig '" + d.mig + "' is not 'enabled' or 'disabled'");
      g.greenContexts = d.green_contexts;
      g.temperatureMilliC = d.temperature_mc;
      g.aliases = d.names;
    }
    v.data = std::move(g);
    t_.addVertex(std::move(v), pci);
  }

  void nic(const Bdf &b, VertexId pci) {
    Vertex nv;
    nv.kind = VertexKind::Nic;
    t_.addVertex(std::move(nv), pci);
    auto it = nicDocs_.find(b.addr);
    if (it == nicDocs_.end())
      return;
    const Nic &d = *it->second;
    setPciId(pci, d.pci_id);
    for (const std::string &name : d.netdevs) {
      Vertex v;
      v.kind = VertexKind::NetDevice;
      v.name = name;
      v.data = NetInfo{};
      t_.addVertex(std::move(v), pci);
    }
    if (!d.rdma.empty()) {
      Vertex v;
      v.kind = VertexKind::RdmaDevice;
      v.name = d.rdma;
      RdmaInfo info;
      for (const Port &p : d.ports)
        info.ports.push_back(RdmaPort{p.port, p.state, p.link_layer, p.rate_gbps, {}});
      info.maxQueuePairs = d.max_qp;
      v.data = std::move(info);
      t_.addVertex(std::move(v), pci);
    }
  }

  void nvme(const Bdf &b, VertexId pci) {
    Vertex cv;
    cv.kind = VertexKind::NvmeController;
    NvmeControllerInfo info;
    info.pci = b.addr;
    auto it = nvmeDocs_.find(b.addr);
    const Nvme *d = it == nvmeDocs_.end() ? nullptr : it->second;
    if (d) {
      setPciId(pci, d->pci_id);
      cv.name = d->controller;
      info.model = d->model;
      info.queueCount = d->queue_count;
      info.queueDepth = d->queue_depth;
    }
    cv.data = info;
    VertexId ctl = t_.addVertex(std::move(cv), pci);
    if (!d)
      return;
    for (const Namespace &ns : d->namespaces) {
      Vertex nv;
      nv.kind = VertexKind::NvmeNamespace;
      nv.name = ns.name;
      nv.data = BlockInfo{ns.size_bytes, "Disk"};
      VertexId n = t_.addVertex(std::move(nv), ctl);
      for (const std::string &p : ns.partitions) {
        Vertex pv;
        pv.kind = VertexKind::NvmePartition;
        pv.name = p;
        pv.data = BlockInfo{0, "Partition"};
        t_.addVertex(std::move(pv), n);
      }
    }
  }

  void extras(VertexId root) {
    for (const Thermal &th : n_.thermal) {
      Vertex v;
      v.kind = VertexKind::ThermalSensor;
      v.name = th.name;
      v.data = ThermalInfo{th.temp_mc, th.limit_mc, ""};
      t_.addVertex(std::move(v), root);
    }
    if (n_.nvlinks.empty())
      return;
    t_.reindex();
    auto end = [&](const Bdf &b) {
      VertexId v = t_.findPci(b.addr);
      if (v == NoVertex) {
        diags_.report(DiagCode::ERR_HAL_TOPO_004, src_.loc(b.loc, b.len))
            << ("nvlink end '" + b.addr.str() + "' is not listed under topology.pcie_domains");
        return NoVertex;
      }
      for (VertexId c : t_.children(v))
        if (t_.vertex(c).kind == VertexKind::Gpu)
          return c;
      return v;
    };
    for (const NvLink &l : n_.nvlinks) {
      VertexId a = end(l.a), b = end(l.b);
      if (a != NoVertex && b != NoVertex)
        t_.addEdge(a, b, Edge{EdgeKind::NvLink, l.links, 0});
    }
  }

  const NodeDoc &n_;
  const SourceText &src_;
  DiagnosticEngine &diags_;
  Topology t_;
  std::vector<unsigned> offline_;
  std::set<unsigned> numaIds_;
  std::map<PciAddress, Bdf> placed_;
  std::map<PciAddress, const Gpu *> gpuDocs_;
  std::map<PciAddress, const Nic *> nicDocs_;
  std::map<PciAddress, const Nvme *> nvmeDocs_;
};

// --- graph -> document ----------------------------------------------------------------------

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

std::optional<Cluster> readClusterYaml(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags) {
  SourceText src(text, fileName, diags);
  auto file = parseFile(src, diags);
  if (!file)
    return std::nullopt;
  Cluster cluster;
  cluster.name = file->cluster;
  if (file->nodes.empty())
    file->nodes.push_back(std::move(file->node));
  bool ok = true;
  cluster.nodes.reserve(file->nodes.size());
  for (const NodeDoc &n : file->nodes) {
    auto t = Builder(n, src, diags).build();
    if (!t) {
      ok = false;
      continue;
    }
    cluster.nodes.push_back(std::move(*t));
  }
  if (!ok)
    return std::nullopt;
  return cluster;
}

std::optional<Topology> readTopologyYaml(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags,
                                         llvm::StringRef node) {
  SourceText src(text, fileName, diags);
  auto file = parseFile(src, diags);
  if (!file)
    return std::nullopt;
  if (file->nodes.empty())
    return Builder(file->node, src, diags).build();
  for (const NodeDoc &n : file->nodes)
    if ((node.empty() && file->nodes.size() == 1) || n.name == node)
      return Builder(n, src, diags).build();
  diags.report(DiagCode::ERR_HAL_TOPO_011, Location{{}, fileName.str(), 0})
      << (node.empty() ? std::string("(none given; the file has ") + std::to_string(file->nodes.size()) + " nodes)"
                       : node.str());
  return std::nullopt;
}

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
