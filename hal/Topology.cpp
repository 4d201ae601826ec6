#include "hal/Topology.h"

#include "support/CpuList.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <atomic>
#include <cassert>

namespace msc::hal {

llvm::StringRef kindName(VertexKind kind) {
  switch (kind) {
  case VertexKind::Machine: return "Machine";
  case VertexKind::Package: return "Package";
  case VertexKind::Group: return "Group";
  case VertexKind::NumaNode: return "NUMANode";
  case VertexKind::Cache: return "Cache";
  case VertexKind::Core: return "Core";
  case VertexKind::Pu: return "PU";
  case VertexKind::HostBridge: return "HostBridge";
  case VertexKind::PciBridge: return "PCIBridge";
  case VertexKind::PciDevice: return "PCI";
  case VertexKind::Gpu: return "GPU";
  case VertexKind::NvmeController: return "NVMe";
  case VertexKind::NvmeNamespace: return "NVMeNamespace";
  case VertexKind::NvmePartition: return "NVMePartition";
  case VertexKind::Nic: return "NIC";
  case VertexKind::NetDevice: return "Net";
  case VertexKind::RdmaDevice: return "RDMA";
  case VertexKind::BlockDevice: return "Block";
  case VertexKind::ThermalSensor: return "Thermal";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// LinkClass

std::string LinkClass::str() const {
  switch (kind) {
  case Self: return "X";
  case Pix: return "PIX";
  case Pxb: return "PXB";
  case Phb: return "PHB";
  case Node: return "NODE";
  case Sys: return "SYS";
  case NvLink: return "NV" + std::to_string(nvlinks);
  case Unknown: break;
  }
  return "?";
}

std::optional<LinkClass> LinkClass::parse(llvm::StringRef text) {
  text = text.trim();
  if (text == "X") return LinkClass{Self, 0};
  if (text == "PIX") return LinkClass{Pix, 0};
  if (text == "PXB") return LinkClass{Pxb, 0};
  if (text == "PHB") return LinkClass{Phb, 0};
  if (text == "NODE") return LinkClass{Node, 0};
  if (text == "SYS" || text == "SOC") return LinkClass{Sys, 0};
  unsigned n = 0;
  if (text.consume_front("NV") && !text.getAsInteger(10, n) && n > 0)
    return LinkClass{NvLink, n};
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Building

Topology::Topology() : shape_(emptyShape()) {}

Topology::Topology(Topology &&other) noexcept
    : shape_(std::exchange(other.shape_, emptyShape())), name_(std::exchange(other.name_, {})),
      notes_(std::exchange(other.notes_, {})), fingerprint_(std::exchange(other.fingerprint_, std::nullopt)) {}

Topology &Topology::operator=(Topology &&other) noexcept {
  if (this != &other) {
    shape_ = std::exchange(other.shape_, emptyShape());
    name_ = std::exchange(other.name_, {});
    notes_ = std::exchange(other.notes_, {});
    fingerprint_ = std::exchange(other.fingerprint_, std::nullopt);
  }
  return *this;
}

std::shared_ptr<Topology::Shape> Topology::emptyShape() {
  static const std::shared_ptr<Shape> empty = std::make_shared<Shape>();
  return empty;
}

Topology::Shape &Topology::mutableShape() {
  // Only this Topology holds the shape when the count is 1: another holder could appear only by
  // copying this very object, which a caller changing it must not do at the same time. The count
  // is read relaxed; the fence orders this thread's writes after the reads of a holder on another
  // thread that has just let go of the shape.
  if (shape_.use_count() > 1)
    shape_ = std::make_shared<Shape>(*shape_);
  else
    std::atomic_thread_fence(std::memory_order_acquire);
  return *shape_;
}

VertexId Topology::addVertex(Vertex v, VertexId parent, EdgeKind link) {
  fingerprint_.reset();
  Graph &g = mutableShape().graph;
  VertexId id = boost::add_vertex(std::move(v), g);
  if (parent != NoVertex)
    boost::add_edge(parent, id, Edge{link, 1, 0}, g);
  return id;
}

void Topology::addEdge(VertexId a, VertexId b, Edge e) {
  fingerprint_.reset();
  boost::add_edge(a, b, e, mutableShape().graph);
}

void Topology::setKernelCmdline(std::string cmdline) {
  fingerprint_.reset();
  Shape &shape = mutableShape();
  shape.cmdline = std::move(cmdline);
  KernelCpuSets sets = parseKernelCmdline(shape.cmdline);
  shape.isolated = std::move(sets.isolated);
  shape.nohzFull = std::move(sets.nohzFull);
}

void Topology::setNumaDistances(std::vector<unsigned> nodeOrder, std::vector<uint64_t> matrix) {
  fingerprint_.reset();
  assert(matrix.size() == nodeOrder.size() * nodeOrder.size());
  Shape &shape = mutableShape();
  shape.distOrder = std::move(nodeOrder);
  shape.distMatrix = std::move(matrix);
}

static uint64_t pciKey(const PciAddress &a) {
  return (uint64_t(a.domain) << 16) | (uint64_t(a.bus) << 8) | (uint64_t(a.device) << 3) | a.function;
}
static uint64_t pairKey(VertexId a, VertexId b) {
  if (a > b)
    std::swap(a, b);
  return (uint64_t(a) << 32) | uint64_t(b);
}

static bool isTreeEdge(EdgeKind k) { return k == EdgeKind::Contains || k == EdgeKind::PcieLink; }

void Topology::reindex() {
  fingerprint_.reset();
  Shape &shape = mutableShape();
  size_t n = vertexCount();
  shape.parent.assign(n, NoVertex);
  shape.children.assign(n, {});
  shape.byKind.assign(static_cast<size_t>(VertexKind::ThermalSensor) + 1, {});
  shape.puByOs.clear();
  shape.numaByOs.clear();
  shape.pciByAddr.clear();
  shape.byName.clear();
  shape.hostBridgeOf.assign(n, NoVertex);
  shape.switchOf.assign(n, NoVertex);
  shape.numaOf.assign(n, -1);
  shape.gpuOrder.clear();
  shape.nvlinks.clear();

  for (auto [it, end] = boost::edges(shape.graph); it != end; ++it) {
    const Edge &e = shape.graph[*it];
    VertexId s = boost::source(*it, shape.graph), t = boost::target(*it, shape.graph);
    if (isTreeEdge(e.kind)) {
      assert(s < t && "loaders add parents before children");
      if (shape.parent[t] == NoVertex)
        shape.parent[t] = s;
    } else if (e.kind == EdgeKind::NvLink) {
      shape.nvlinks[pairKey(s, t)] += e.count;
    }
  }
  for (VertexId v = 0; v < n; ++v) {
    const Vertex &x = shape.graph[v];
    if (shape.parent[v] != NoVertex)
      shape.children[shape.parent[v]].push_back(v);
    shape.byKind[static_cast<size_t>(x.kind)].push_back(v);
    VertexId p = shape.parent[v];
    // locality and PCIe ancestry are inherited down the tree (parents come first)
    shape.numaOf[v] = x.kind == VertexKind::NumaNode ? int(x.osIndex) : x.numaNode;
    if (shape.numaOf[v] < 0 && p != NoVertex && x.kind != VertexKind::NumaNode)
      shape.numaOf[v] = shape.numaOf[p];
    if (x.kind == VertexKind::HostBridge)
      shape.hostBridgeOf[v] = v;
    else if (p != NoVertex)
      shape.hostBridgeOf[v] = shape.hostBridgeOf[p];
    if (p != NoVertex) {
      const PciInfo *pi = shape.graph[p].as<PciInfo>();
      if (shape.graph[p].kind == VertexKind::PciBridge && pi && pi->role == BridgeRole::SwitchUpstream)
        shape.switchOf[v] = p;
      else
        shape.switchOf[v] = shape.switchOf[p];
    }
    switch (x.kind) {
    case VertexKind::Pu:
      if (x.osIndex >= 0) {
        if (size_t(x.osIndex) >= shape.puByOs.size())
          shape.puByOs.resize(x.osIndex + 1, NoVertex);
        shape.puByOs[x.osIndex] = v;
      }
      break;
    case VertexKind::NumaNode:
      shape.numaByOs[unsigned(x.osIndex)] = v;
      break;
    case VertexKind::PciBridge:
    case VertexKind::PciDevice:
      if (const PciInfo *pi = x.as<PciInfo>())
        shape.pciByAddr.try_emplace(pciKey(pi->address), v);
      break;
    default:
      break;
    }
    if (!x.name.empty() && x.kind >= VertexKind::Gpu)
      shape.byName.try_emplace(x.name, v);
    if (const GpuInfo *g = x.as<GpuInfo>())
      for (const std::string &alias : g->aliases)
        shape.byName.try_emplace(alias, v);
  }
  // GPUs in PCI address order (CUDA_DEVICE_ORDER=PCI_BUS_ID), then by vertex for PCI-less ones.
  std::vector<VertexId> g = verticesOf(VertexKind::Gpu);
  std::stable_sort(g.begin(), g.end(), [&](VertexId a, VertexId b) {
    return shape.graph[a].as<GpuInfo>()->pci < shape.graph[b].as<GpuInfo>()->pci;
  });
  shape.gpuOrder = std::move(g);
  // Every core by its first PU: PUs ascend, so the first seen of a core is its smallest.
  shape.coreFirstPus.clear();
  std::vector<bool> coreSeen(n, false);
  for (unsigned pu = 0; pu < shape.puByOs.size(); ++pu) {
    if (shape.puByOs[pu] == NoVertex)
      continue;
    VertexId core = physicalCoreOf(pu);
    if (core == NoVertex)
      shape.coreFirstPus.push_back(pu);
    else if (!coreSeen[core]) {
      coreSeen[core] = true;
      shape.coreFirstPus.push_back(pu);
    }
  }
}

std::vector<GpuRef> Topology::gpus() const {
  std::vector<GpuRef> out;
  out.reserve(shape_->gpuOrder.size());
  for (unsigned i = 0; i < shape_->gpuOrder.size(); ++i)
    out.push_back(GpuRef{i, shape_->gpuOrder[i], shape_->graph[shape_->gpuOrder[i]].as<GpuInfo>()});
  return out;
}

// ---------------------------------------------------------------------------------------------
// CPUs

bool Topology::isPuOnline(unsigned os) const {
  VertexId v = puVertex(os);
  if (v == NoVertex)
    return false;
  const PuInfo *p = shape_->graph[v].as<PuInfo>();
  return !p || p->online;
}

std::vector<unsigned> Topology::pus() const {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < shape_->puByOs.size(); ++i)
    if (shape_->puByOs[i] != NoVertex)
      out.push_back(i);
  return out;
}

VertexId Topology::physicalCoreOf(unsigned pu) const {
  for (VertexId v = puVertex(pu); v != NoVertex; v = shape_->parent[v])
    if (shape_->graph[v].kind == VertexKind::Core)
      return v;
  return NoVertex;
}

unsigned Topology::firstPuOfCore(unsigned pu) const {
  std::vector<unsigned> siblings = smtSiblings(pu);
  return siblings.empty() ? pu : siblings.front(); // sorted
}

std::vector<unsigned> Topology::smtSiblings(unsigned pu) const {
  VertexId core = physicalCoreOf(pu);
  if (core == NoVertex)
    return hasPu(pu) ? std::vector<unsigned>{pu} : std::vector<unsigned>{};
  std::vector<unsigned> out;
  llvm::SmallVector<VertexId, 8> stack{core};
  while (!stack.empty()) {
    VertexId v = stack.pop_back_val();
    if (shape_->graph[v].kind == VertexKind::Pu)
      out.push_back(unsigned(shape_->graph[v].osIndex));
    for (VertexId c : shape_->children[v])
      stack.push_back(c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<unsigned> Topology::numaNodeOfPu(unsigned pu) const {
  VertexId v = puVertex(pu);
  if (v == NoVertex || shape_->numaOf[v] < 0)
    return std::nullopt;
  return unsigned(shape_->numaOf[v]);
}

std::vector<unsigned> Topology::cpusOfNumaNode(unsigned node) const {
  const NumaInfo *info = numaInfo(node);
  return info ? info->cpus : std::vector<unsigned>{};
}

// ---------------------------------------------------------------------------------------------
// Memory

std::vector<unsigned> Topology::numaNodes() const {
  std::vector<unsigned> out;
  for (VertexId v : verticesOf(VertexKind::NumaNode))
    out.push_back(unsigned(shape_->graph[v].osIndex));
  std::sort(out.begin(), out.end());
  return out;
}

VertexId Topology::numaVertex(unsigned os) const {
  auto it = shape_->numaByOs.find(os);
  return it == shape_->numaByOs.end() ? NoVertex : it->second;
}

const NumaInfo *Topology::numaInfo(unsigned os) const {
  VertexId v = numaVertex(os);
  return v == NoVertex ? nullptr : shape_->graph[v].as<NumaInfo>();
}

std::string HugepagePool::freeText() const {
  return (free ? std::to_string(*free) : std::string("?")) + "/" + std::to_string(total) + " free" +
         (free ? "" : " (the topology does not say how many)");
}

const HugepagePool *Topology::hugepagePool(unsigned node, uint64_t pageSize) const {
  const NumaInfo *info = numaInfo(node);
  if (!info)
    return nullptr;
  for (const HugepagePool &p : info->hugepages)
    if (p.pageSize == pageSize)
      return &p;
  return nullptr;
}

std::optional<uint64_t> Topology::freeHugepages(unsigned node, uint64_t pageSize) const {
  const HugepagePool *pool = hugepagePool(node, pageSize);
  return pool ? pool->free : std::nullopt;
}

std::optional<uint64_t> Topology::numaDistance(unsigned a, unsigned b) const {
  auto ia = llvm::find(shape_->distOrder, a), ib = llvm::find(shape_->distOrder, b);
  if (ia == shape_->distOrder.end() || ib == shape_->distOrder.end())
    return std::nullopt;
  const std::vector<unsigned> &order = shape_->distOrder;
  return shape_->distMatrix[(ia - order.begin()) * order.size() + (ib - order.begin())];
}

// ---------------------------------------------------------------------------------------------
// Devices

VertexId Topology::findPci(const PciAddress &addr) const {
  auto it = shape_->pciByAddr.find(pciKey(addr));
  return it == shape_->pciByAddr.end() ? NoVertex : it->second;
}

VertexId Topology::findDevice(llvm::StringRef nameOrBdf) const {
  nameOrBdf = nameOrBdf.trim();
  nameOrBdf.consume_front("/dev/");
  auto it = shape_->byName.find(nameOrBdf);
  if (it != shape_->byName.end())
    return it->second;
  if (auto parsed = parsePci(nameOrBdf); parsed && parsed->form != ParsedPci::Form::BusOnly) {
    if (VertexId v = findPci(parsed->address); v != NoVertex)
      return v;
    // "81:00.0" without a domain: the unique match in any domain
    if (parsed->form == ParsedPci::Form::NoDomain) {
      VertexId found = NoVertex;
      for (auto &[key, v] : shape_->pciByAddr) {
        if ((key & 0xffff) == (pciKey(parsed->address) & 0xffff)) {
          if (found != NoVertex)
            return NoVertex;
          found = v;
        }
      }
      return found;
    }
  }
  return NoVertex;
}

VertexId Topology::pciFunctionOf(VertexId device) const {
  for (VertexId v = device; v != NoVertex; v = shape_->parent[v]) {
    VertexKind k = shape_->graph[v].kind;
    if (k == VertexKind::PciDevice || k == VertexKind::PciBridge)
      return v;
    if (k < VertexKind::HostBridge)
      return NoVertex;
  }
  return NoVertex;
}

std::optional<unsigned> Topology::numaNodeOfDevice(VertexId device) const {
  if (device == NoVertex || shape_->numaOf[device] < 0)
    return std::nullopt;
  return unsigned(shape_->numaOf[device]);
}

VertexId Topology::rootComplexOf(VertexId device) const {
  return device == NoVertex ? NoVertex : shape_->hostBridgeOf[device];
}

VertexId Topology::pcieSwitchOf(VertexId device) const {
  if (device == NoVertex)
    return NoVertex;
  // A switch's own ports belong to it; anything below sees the closest upstream port.
  const Vertex &x = shape_->graph[device];
  if (x.kind == VertexKind::PciBridge && x.as<PciInfo>()->role == BridgeRole::SwitchUpstream)
    return device;
  return shape_->switchOf[device];
}

bool Topology::shareSwitch(VertexId a, VertexId b) const {
  VertexId sa = pcieSwitchOf(a), sb = pcieSwitchOf(b);
  return sa != NoVertex && sa == sb;
}

bool Topology::shareRootComplex(VertexId a, VertexId b) const {
  VertexId ra = rootComplexOf(a), rb = rootComplexOf(b);
  return ra != NoVertex && ra == rb;
}

unsigned Topology::nvlinkCount(VertexId a, VertexId b) const {
  if (a == NoVertex || b == NoVertex || a == b)
    return 0;
  auto it = shape_->nvlinks.find(pairKey(a, b));
  if (it != shape_->nvlinks.end())
    return it->second;
  // Through an NVSwitch fabric: every GPU reaches every other with all its switch links.
  auto switchLinks = [&](VertexId g) {
    unsigned links = 0;
    auto count = [&](VertexId other, const Edge &e) {
      if (e.kind == EdgeKind::NvLink && shape_->graph[other].kind == VertexKind::PciDevice)
        links += e.count;
    };
    for (auto [i, end] = boost::out_edges(g, shape_->graph); i != end; ++i)
      count(boost::target(*i, shape_->graph), shape_->graph[*i]);
    for (auto [i, end] = boost::in_edges(g, shape_->graph); i != end; ++i)
      count(boost::source(*i, shape_->graph), shape_->graph[*i]);
    return links;
  };
  return std::min(switchLinks(a), switchLinks(b));
}

// A switch is one upstream port and its downstream ports; a root port or other bridge stands alone.
VertexId Topology::switchUnitOf(VertexId bridge) const {
  const PciInfo *pi = shape_->graph[bridge].as<PciInfo>();
  if (pi && pi->role == BridgeRole::SwitchDownstream && shape_->parent[bridge] != NoVertex)
    return shape_->parent[bridge];
  return bridge;
}

LinkClass Topology::linkClass(VertexId a, VertexId b) const {
  if (a == NoVertex || b == NoVertex)
    return {};
  // NVLink is a property of the GPUs, not of their PCI functions.
  auto gpuOf = [&](VertexId v) {
    if (shape_->graph[v].kind == VertexKind::Gpu)
      return v;
    for (VertexId c : shape_->children[v])
      if (shape_->graph[c].kind == VertexKind::Gpu)
        return c;
    return v;
  };
  VertexId fa = pciFunctionOf(a), fb = pciFunctionOf(b);
  if (a == b || (fa != NoVertex && fa == fb))
    return {LinkClass::Self, 0};
  if (unsigned links = nvlinkCount(gpuOf(a), gpuOf(b)))
    return {LinkClass::NvLink, links};
  auto numaOrSys = [&]() -> LinkClass {
    int na = shape_->numaOf[a], nb = shape_->numaOf[b];
    if (na < 0 || nb < 0)
      return {LinkClass::Sys, 0};
    return {na == nb ? LinkClass::Node : LinkClass::Sys, 0};
  };
  if (fa == NoVertex || fb == NoVertex)
    return numaOrSys();
  if (shape_->hostBridgeOf[fa] == NoVertex || shape_->hostBridgeOf[fa] != shape_->hostBridgeOf[fb])
    return numaOrSys();
  // Same host bridge: find the lowest common ancestor and count the switches crossed.
  llvm::SmallVector<VertexId, 16> pathA, pathB;
  for (VertexId v = fa; v != NoVertex; v = shape_->parent[v])
    pathA.push_back(v);
  for (VertexId v = fb; v != NoVertex; v = shape_->parent[v])
    pathB.push_back(v);
  VertexId lca = NoVertex;
  while (!pathA.empty() && !pathB.empty() && pathA.back() == pathB.back()) {
    lca = pathA.back();
    pathA.pop_back();
    pathB.pop_back();
  }
  if (lca == NoVertex || shape_->graph[lca].kind == VertexKind::HostBridge)
    return {LinkClass::Phb, 0};
  llvm::SmallVector<VertexId, 8> units;
  auto addUnits = [&](llvm::ArrayRef<VertexId> path) {
    for (VertexId v : path)
      if (shape_->graph[v].kind == VertexKind::PciBridge) {
        VertexId u = switchUnitOf(v);
        if (!llvm::is_contained(units, u))
          units.push_back(u);
      }
  };
  addUnits(pathA);
  addUnits(pathB);
  addUnits(llvm::ArrayRef<VertexId>(lca));
  return {units.size() <= 1 ? LinkClass::Pix : LinkClass::Pxb, 0};
}

std::optional<GpuRef> Topology::gpuByIndex(unsigned index) const {
  if (index >= shape_->gpuOrder.size())
    return std::nullopt;
  return GpuRef{index, shape_->gpuOrder[index], shape_->graph[shape_->gpuOrder[index]].as<GpuInfo>()};
}

std::optional<GpuRef> Topology::gpuByPci(const PciAddress &addr) const {
  for (unsigned i = 0; i < shape_->gpuOrder.size(); ++i)
    if (shape_->graph[shape_->gpuOrder[i]].as<GpuInfo>()->pci == addr)
      return GpuRef{i, shape_->gpuOrder[i], shape_->graph[shape_->gpuOrder[i]].as<GpuInfo>()};
  return std::nullopt;
}

VertexId Topology::blockDevice(llvm::StringRef devName) const {
  devName.consume_front("/dev/");
  auto it = shape_->byName.find(devName);
  if (it == shape_->byName.end())
    return NoVertex;
  VertexKind k = shape_->graph[it->second].kind;
  return (k == VertexKind::NvmeNamespace || k == VertexKind::NvmePartition || k == VertexKind::BlockDevice)
             ? it->second
             : NoVertex;
}

const RdmaInfo *Topology::rdmaDevice(llvm::StringRef name) const {
  auto it = shape_->byName.find(name);
  return it == shape_->byName.end() ? nullptr : shape_->graph[it->second].as<RdmaInfo>();
}

size_t Topology::memoryFootprint() const {
  size_t bytes = sizeof(*this);
  size_t n = vertexCount();
  bytes += n * (sizeof(Vertex) + 2 * sizeof(void *) * 3); // vertex storage + edge lists
  bytes += boost::num_edges(shape_->graph) * (sizeof(Edge) + 4 * sizeof(void *));
  for (VertexId v = 0; v < n; ++v) {
    const Vertex &x = shape_->graph[v];
    bytes += x.name.capacity() > 15 ? x.name.capacity() : 0;
    if (const NumaInfo *ni = x.as<NumaInfo>())
      bytes += ni->cpus.capacity() * sizeof(unsigned) + ni->hugepages.capacity() * sizeof(HugepagePool);
    if (const RdmaInfo *ri = x.as<RdmaInfo>())
      bytes += ri->ports.capacity() * sizeof(RdmaPort);
  }
  bytes += n * (sizeof(VertexId) * 3 + sizeof(int) + sizeof(std::vector<VertexId>));
  bytes += shape_->puByOs.capacity() * sizeof(VertexId) + shape_->coreFirstPus.capacity() * sizeof(unsigned);
  bytes += shape_->numaByOs.getMemorySize() + shape_->pciByAddr.getMemorySize();
  bytes += shape_->byName.getNumBuckets() * (sizeof(void *) + 32);
  bytes += shape_->cmdline.capacity() + shape_->distMatrix.capacity() * sizeof(uint64_t);
  return bytes;
}

std::string Topology::label(VertexId v) const {
  const Vertex &x = shape_->graph[v];
  std::string out = kindName(x.kind).str();
  switch (x.kind) {
  case VertexKind::HostBridge: {
    const HostBridgeInfo *h = x.as<HostBridgeInfo>();
    out += " " + PciBus{h->domain, h->firstBus}.str();
    return out;
  }
  case VertexKind::PciBridge:
  case VertexKind::PciDevice:
    return out + " " + x.as<PciInfo>()->address.str();
  case VertexKind::Gpu:
    return out + " " + x.as<GpuInfo>()->pci.str();
  default:
    break;
  }
  if (!x.name.empty())
    return out + " " + x.name;
  if (x.osIndex >= 0)
    return out + " P#" + std::to_string(x.osIndex);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The kernel command line

KernelCpuSets parseKernelCmdline(llvm::StringRef cmdline) {
  KernelCpuSets sets;
  llvm::SmallVector<llvm::StringRef, 32> words;
  cmdline.split(words, ' ', -1, false);
  for (llvm::StringRef w : words) {
    w = w.trim();
    auto [key, value] = w.split('=');
    if (key == "isolcpus") {
      // isolcpus=[flag,...,]cpu-list: flags are words (nohz, domain, managed_irq)
      llvm::SmallVector<llvm::StringRef, 8> items;
      value.split(items, ',');
      std::string list;
      for (llvm::StringRef item : items) {
        if (!item.empty() && llvm::isAlpha(item.front()))
          continue;
        if (!list.empty())
          list += ',';
        list += item.str();
      }
      if (auto cpus = parseCpuList(list))
        for (unsigned c : *cpus)
          sets.isolated.push_back(c);
    } else if (key == "nohz_full") {
      if (auto cpus = parseCpuList(value))
        sets.nohzFull = *cpus;
    }
  }
  std::sort(sets.isolated.begin(), sets.isolated.end());
  sets.isolated.erase(std::unique(sets.isolated.begin(), sets.isolated.end()), sets.isolated.end());
  return sets;
}

uint64_t fnv1a64(llvm::StringRef bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace msc::hal
