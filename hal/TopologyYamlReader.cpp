// Reading the YAML topology format: the text is parsed into the document (with coded errors for
// malformed YAML, PCI addresses and CPU lists), then each node's document is built into a Topology,
// checking what the document cannot express (duplicates, devices outside the PCIe tree, NUMA ids).
#include "hal/TopologyYaml.h"
#include "hal/detail/ClusterYamlReading.h"
#include "hal/detail/NodeSequence.h"
#include "hal/detail/TopologyYamlDocument.h"
#include "support/CpuList.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/YAMLParser.h>

#include <algorithm>
#include <map>
#include <set>

using namespace msc::hal::doc;
using msc::hal::detail::NodeSequence;
using msc::hal::detail::NodeText;
using msc::hal::detail::cutNodeSequence;

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

// Parses `text` (the whole document, or one piece of it) into `out`: a File, or a sequence of nodes.
template <typename T> bool parseYaml(llvm::StringRef text, const SourceText &src, DiagnosticEngine &diags, T &out) {
  ParseContext ctx;
  YamlDiagState state{&src, &diags, &ctx};
  unsigned before = diags.errorCount();
  llvm::yaml::Input in(text, &ctx, yamlDiagHandler, &state);
  in >> out;
  if (in.error() || diags.errorCount() != before) {
    if (diags.errorCount() == before)
      diags.report(DiagCode::ERR_HAL_TOPO_004, src.loc(llvm::SMLoc::getFromPointer(text.begin())))
          << in.error().message();
    return false;
  }
  return true;
}

std::optional<File> parseFile(const SourceText &src, DiagnosticEngine &diags) {
  if (auto why = tooDeep(src.text())) {
    diags.report(DiagCode::ERR_HAL_TOPO_004, src.loc(llvm::SMLoc::getFromPointer(src.text().begin()))) << *why;
    return std::nullopt;
  }
  File file;
  if (!parseYaml(src.text(), src, diags, file))
    return std::nullopt;
  return file;
}

uint32_t parsePciId(llvm::StringRef id) {
  auto [v, d] = id.split(':');
  uint16_t vendor = 0, device = 0;
  if (v.getAsInteger(16, vendor) || d.getAsInteger(16, device))
    return 0;
  return (uint32_t(vendor) << 16) | device;
}

class Builder {
public:
  // Builds into `out`, an empty topology.
  Builder(const NodeDoc &node, const SourceText &src, DiagnosticEngine &diags, Topology &out)
      : n_(node), src_(src), diags_(diags), t_(out) {}

  bool build() {
    unsigned before = diags_.errorCount();
    t_.setName(n_.name);
    t_.setKernelCmdline(n_.kernel_cmdline);
    if (!n_.offline_cpus.empty()) {
      std::string why;
      std::optional<std::vector<unsigned>> offline = parseCpuList(n_.offline_cpus, &why);
      if (!offline) {
        diags_.report(DiagCode::ERR_HAL_TOPO_008, src_.loc(llvm::SMLoc())) << n_.offline_cpus << why;
        return false;
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
      return false;
    t_.reindex();
    return true;
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
    PciInfo &info = *t_.mutableVertex(pci).as<PciInfo>();
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
  Topology &t_;
  std::vector<unsigned> offline_;
  std::set<unsigned> numaIds_;
  std::map<PciAddress, Bdf> placed_;
  std::map<PciAddress, const Gpu *> gpuDocs_;
  std::map<PciAddress, const Nic *> nicDocs_;
  std::map<PciAddress, const Nvme *> nvmeDocs_;
};

// The root mapping's keys, in order, each with whether its value is empty; nothing when the text
// is not one document holding one mapping with scalar keys.
std::optional<std::vector<std::pair<std::string, bool>>> topLevelKeys(llvm::StringRef text) {
  llvm::SourceMgr sm;
  sm.setDiagHandler([](const llvm::SMDiagnostic &, void *) {});
  std::error_code ec;
  llvm::yaml::Stream stream(text, sm, false, &ec);
  auto doc = stream.begin();
  if (doc == stream.end())
    return std::nullopt;
  llvm::yaml::Node *root = doc->getRoot();
  // An item is a sequence of one mapping.
  if (auto *seq = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(root)) {
    auto first = seq->begin();
    root = first == seq->end() ? nullptr : &*first;
  }
  auto *map = llvm::dyn_cast_or_null<llvm::yaml::MappingNode>(root);
  if (!map)
    return std::nullopt;
  std::vector<std::pair<std::string, bool>> keys;
  for (llvm::yaml::KeyValueNode &kv : *map) {
    auto *key = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(kv.getKey());
    if (!key)
      return std::nullopt;
    llvm::SmallString<32> storage;
    keys.emplace_back(key->getValue(storage).str(), llvm::isa_and_nonnull<llvm::yaml::NullNode>(kv.getValue()));
  }
  if (ec || stream.failed())
    return std::nullopt;
  return keys;
}

// The head of a cut ends in `nodes:` with nothing after it: a quoted `cluster:` value left open
// would otherwise take the `nodes:` line into itself and still parse.
bool headEndsInNodes(llvm::StringRef head) {
  auto keys = topLevelKeys(head);
  return keys && !keys->empty() && keys->back() == std::make_pair(std::string("nodes"), true);
}

// An item whose only `name` key is its first line's: the items that share its shape take their
// names from their own first lines. (LLVM YAML I/O keeps the last of repeated keys.)
bool namedOnce(llvm::StringRef item) {
  auto keys = topLevelKeys(item);
  return keys && llvm::count_if(*keys, [](const auto &k) { return k.first == "name"; }) == 1;
}

// An item whose value is null to YAML: nothing after its dash but blank lines and comments, or only
// a tag or an anchor (`- !`). The whole document reads such an item as an empty mapping or as none
// depending on what follows it (the fuzzer found both forms read alone as a node that the whole
// document refuses). Such items are left to it.
bool nullItem(llvm::StringRef item) {
  llvm::SourceMgr sm;
  sm.setDiagHandler([](const llvm::SMDiagnostic &, void *) {});
  std::error_code ec;
  llvm::yaml::Stream stream(item, sm, false, &ec);
  auto doc = stream.begin();
  if (doc == stream.end())
    return true;
  auto *seq = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(doc->getRoot());
  if (!seq)
    return false;
  auto first = seq->begin();
  return first == seq->end() || llvm::isa<llvm::yaml::NullNode>(*first);
}

// Diagnostics of a reading whose failure is not reported (the whole reading reports it again).
class DiscardingConsumer : public DiagnosticConsumer {
public:
  void handle(const Diagnostic &, const llvm::SourceMgr *) override {}
};

} // namespace

namespace detail {

std::optional<Cluster> readClusterByNode(llvm::StringRef text, llvm::StringRef fileName) {
  if (tooDeep(text))
    return std::nullopt;
  std::optional<NodeSequence> seq = cutNodeSequence(text);
  if (!seq)
    return std::nullopt;
  DiscardingConsumer discard;
  DiagnosticEngine diags(nullptr, discard);
  SourceText src(text, fileName, diags);
  File head;
  if (!parseYaml(seq->head, src, diags, head) || !headEndsInNodes(seq->head))
    return std::nullopt;
  Cluster cluster;
  cluster.name = std::move(head.cluster);
  cluster.nodes.reserve(seq->nodes.size());
  // The first node of each shape, by the text after its first line; whether its name is set only
  // there is checked when a second item of its shape comes.
  struct FirstOfShape {
    size_t node;
    llvm::StringRef item;
    std::optional<bool> shareable;
  };
  llvm::DenseMap<llvm::StringRef, FirstOfShape> shapes;
  for (const NodeText &node : seq->nodes) {
    if (node.named) {
      auto it = shapes.find(node.named->rest);
      if (it != shapes.end()) {
        FirstOfShape &shape = it->second;
        if (!shape.shareable)
          shape.shareable = namedOnce(shape.item);
        // The name as the whole reading gets it: the first line alone, read as an item.
        std::vector<NodeDoc> first;
        if (*shape.shareable && parseYaml(node.named->firstLine, src, diags, first) && first.size() == 1) {
          cluster.nodes.push_back(cluster.nodes[shape.node]); // shares the graph (copy-on-write)
          cluster.nodes.back().setName(std::move(first.front().name));
          continue;
        }
      }
    }
    std::vector<NodeDoc> docs;
    if (nullItem(node.item) || !parseYaml(node.item, src, diags, docs) || docs.size() != 1)
      return std::nullopt;
    cluster.nodes.emplace_back();
    if (!Builder(docs.front(), src, diags, cluster.nodes.back()).build())
      return std::nullopt;
    if (node.named)
      shapes.try_emplace(node.named->rest, FirstOfShape{cluster.nodes.size() - 1, node.item, std::nullopt});
  }
  return cluster;
}

std::optional<Cluster> readClusterWhole(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags) {
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
    cluster.nodes.emplace_back();
    if (!Builder(n, src, diags, cluster.nodes.back()).build()) {
      ok = false;
      cluster.nodes.pop_back();
    }
  }
  if (!ok)
    return std::nullopt;
  return cluster;
}

} // namespace detail

// Node by node when the layout allows (a large cluster is mostly nodes of a few machine shapes);
// the whole document otherwise, and whenever that fails, for the diagnostics.
std::optional<Cluster> readClusterYaml(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags) {
  if (std::optional<Cluster> cluster = detail::readClusterByNode(text, fileName))
    return cluster;
  return detail::readClusterWhole(text, fileName, diags);
}

std::optional<Topology> readTopologyYaml(llvm::StringRef text, llvm::StringRef fileName, DiagnosticEngine &diags,
                                         llvm::StringRef node) {
  SourceText src(text, fileName, diags);
  auto file = parseFile(src, diags);
  if (!file)
    return std::nullopt;
  auto build = [&](const NodeDoc &n) -> std::optional<Topology> {
    std::optional<Topology> t(std::in_place);
    if (!Builder(n, src, diags, *t).build())
      return std::nullopt;
    return t;
  };
  if (file->nodes.empty())
    return build(file->node);
  for (const NodeDoc &n : file->nodes)
    if ((node.empty() && file->nodes.size() == 1) || n.name == node)
      return build(n);
  diags.report(DiagCode::ERR_HAL_TOPO_011, Location{{}, fileName.str(), 0})
      << (node.empty() ? std::string("(none given; the file has ") + std::to_string(file->nodes.size()) + " nodes)"
                       : node.str());
  return std::nullopt;
}

} // namespace msc::hal
