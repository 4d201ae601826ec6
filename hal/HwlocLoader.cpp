// hwloc -> Topology: the walk over hwloc's tree (CPU side, memory, I/O), the XML loader (v1/v2;
// v3 refused with a coded error) and live discovery (hwloc on "/" or on a recorded sysfs root).
#include "hal/GpuModels.h"
#include "hal/Loader.h"
#include "hal/detail/Probes.h"

#include <hwloc.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

namespace msc::hal {
using namespace detail;

namespace {

// Sets environment variables for the duration of one hwloc load (hwloc reads them at load time).
class ScopedEnv {
public:
  void set(const char *name, const char *value) {
    const char *old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

struct HwlocHandle {
  hwloc_topology_t topo = nullptr;
  ~HwlocHandle() {
    if (topo)
      hwloc_topology_destroy(topo);
  }
};

int firstNode(hwloc_const_nodeset_t set) {
  if (!set || hwloc_bitmap_iszero(set))
    return -1;
  return hwloc_bitmap_first(set);
}

std::vector<unsigned> cpusOf(hwloc_const_cpuset_t set) {
  std::vector<unsigned> out;
  if (!set)
    return out;
  int i;
  hwloc_bitmap_foreach_begin(i, set) { out.push_back(unsigned(i)); }
  hwloc_bitmap_foreach_end();
  return out;
}

const char *info(hwloc_obj_t obj, const char *name) { return hwloc_obj_get_info_by_name(obj, name); }

PciAddress pciAddressOf(const hwloc_obj_attr_u::hwloc_pcidev_attr_s &a) {
  return PciAddress{uint32_t(a.domain), uint8_t(a.bus), uint8_t(a.dev), uint8_t(a.func)};
}

PciInfo pciInfoOf(hwloc_obj_t obj, const hwloc_obj_attr_u::hwloc_pcidev_attr_s &a) {
  PciInfo p;
  p.address = pciAddressOf(a);
  p.vendorId = a.vendor_id;
  p.deviceId = a.device_id;
  p.classId = a.class_id;
  p.linkGBps = a.linkspeed;
  if (const char *v = info(obj, "PCIVendor"))
    p.vendorName = v;
  if (const char *d = info(obj, "PCIDevice"))
    p.deviceName = d;
  return p;
}

bool isGpuOsdev(hwloc_obj_t o) {
  if (o->type != HWLOC_OBJ_OS_DEVICE)
    return false;
  auto t = o->attr->osdev.type;
  if (t != HWLOC_OBJ_OSDEV_GPU && t != HWLOC_OBJ_OSDEV_COPROC)
    return false;
  llvm::StringRef sub = o->subtype ? o->subtype : "";
  llvm::StringRef name = o->name ? o->name : "";
  return sub == "CUDA" || sub == "NVML" || sub == "RSMI" || sub == "OpenCL" || sub == "LevelZero" ||
         name.starts_with("cuda") || name.starts_with("nvml") || name.starts_with("rsmi") ||
         name.starts_with("opencl");
}

class HwlocConverter {
public:
  HwlocConverter(hwloc_topology_t topo, Topology &out) : topo_(topo), t_(out) {}

  void run() {
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    if (const char *host = info(root, "HostName"))
      t_.setName(host);
    // GPU memory exposed as NUMA nodes (POWER9, Grace) names its GPU: "PCIBusID=0004:05:00.0".
    for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, n));)
      if (const char *bus = info(n, "PCIBusID"))
        if (auto addr = parsePciAddress(bus))
          gpuMemory_.emplace(*addr, n->attr->numanode.local_memory);
    walk(root, NoVertex);
    distances();
  }

private:
  VertexId add(hwloc_obj_t obj, Vertex v, VertexId parent, EdgeKind link = EdgeKind::Contains) {
    VertexId id = t_.addVertex(std::move(v), parent, link);
    objToVertex_[obj] = id;
    return id;
  }

  int localNode(hwloc_obj_t obj) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, obj);
    return anc ? firstNode(anc->nodeset) : -1;
  }

  void walk(hwloc_obj_t obj, VertexId parent) {
    VertexId v = convert(obj, parent);
    if (v == NoVertex)
      return; // skipped subtree (Misc, DMA channels)
    for (hwloc_obj_t c = obj->memory_first_child; c; c = c->next_sibling)
      walk(c, v);
    for (hwloc_obj_t c = obj->first_child; c; c = c->next_sibling)
      walk(c, v);
    if (obj->type == HWLOC_OBJ_PCI_DEVICE) {
      pciChildren(obj, v);
      return;
    }
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
      walk(c, v);
  }

  VertexId convert(hwloc_obj_t obj, VertexId parent) {
    Vertex v;
    v.osIndex = obj->os_index == HWLOC_UNKNOWN_INDEX ? -1 : int64_t(obj->os_index);
    switch (obj->type) {
    case HWLOC_OBJ_MACHINE:
      v.kind = VertexKind::Machine;
      v.osIndex = -1;
      return add(obj, std::move(v), parent);
    case HWLOC_OBJ_PACKAGE:
      v.kind = VertexKind::Package;
      return add(obj, std::move(v), parent);
    case HWLOC_OBJ_GROUP:
    case HWLOC_OBJ_DIE:
      v.kind = VertexKind::Group;
      if (obj->type == HWLOC_OBJ_DIE)
        v.name = "Die";
      return add(obj, std::move(v), parent);
    case HWLOC_OBJ_NUMANODE: {
      v.kind = VertexKind::NumaNode;
      NumaInfo n;
      n.memoryBytes = obj->attr->numanode.local_memory;
      for (unsigned i = 0; i < obj->attr->numanode.page_types_len; ++i) {
        auto &pt = obj->attr->numanode.page_types[i];
        if (i == 0 && pt.size <= 65536)
          continue; // the normal page size, not a hugepage pool
        if (pt.size)
          n.hugepages.push_back(HugepagePool{pt.size, pt.count, std::nullopt});
      }
      n.cpus = cpusOf(obj->cpuset);
      if (obj->subtype)
        n.subtype = obj->subtype;
      v.data = std::move(n);
      return add(obj, std::move(v), parent);
    }
    case HWLOC_OBJ_L1CACHE:
    case HWLOC_OBJ_L2CACHE:
    case HWLOC_OBJ_L3CACHE:
    case HWLOC_OBJ_L4CACHE:
    case HWLOC_OBJ_L5CACHE:
    case HWLOC_OBJ_L1ICACHE:
    case HWLOC_OBJ_L2ICACHE:
    case HWLOC_OBJ_L3ICACHE: {
      v.kind = VertexKind::Cache;
      v.osIndex = -1;
      CacheInfo c;
      c.level = obj->attr->cache.depth;
      c.sizeBytes = obj->attr->cache.size;
      c.type = obj->attr->cache.type == HWLOC_OBJ_CACHE_DATA          ? 'D'
               : obj->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION ? 'I'
                                                                      : 'U';
      v.data = c;
      return add(obj, std::move(v), parent);
    }
    case HWLOC_OBJ_CORE:
      v.kind = VertexKind::Core;
      return add(obj, std::move(v), parent);
    case HWLOC_OBJ_PU:
      v.kind = VertexKind::Pu;
      v.numaNode = firstNode(obj->nodeset);
      v.data = PuInfo{true};
      return add(obj, std::move(v), parent);
    case HWLOC_OBJ_BRIDGE: {
      v.osIndex = -1;
      if (obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
        v.kind = VertexKind::HostBridge;
        v.numaNode = localNode(obj);
        HostBridgeInfo h;
        h.domain = obj->attr->bridge.downstream.pci.domain;
        h.firstBus = obj->attr->bridge.downstream.pci.secondary_bus;
        h.lastBus = obj->attr->bridge.downstream.pci.subordinate_bus;
        v.data = h;
        return add(obj, std::move(v), parent);
      }
      v.kind = VertexKind::PciBridge;
      PciInfo p = pciInfoOf(obj, obj->attr->bridge.upstream.pci);
      p.role = bridgeRole(parent, p);
      if (parent == NoVertex || t_.vertex(parent).kind > VertexKind::PciDevice ||
          t_.vertex(parent).kind < VertexKind::HostBridge)
        v.numaNode = localNode(obj);
      v.data = std::move(p);
      return add(obj, std::move(v), parent, EdgeKind::PcieLink);
    }
    case HWLOC_OBJ_PCI_DEVICE: {
      v.kind = VertexKind::PciDevice;
      v.osIndex = -1;
      if (parent == NoVertex || t_.vertex(parent).kind < VertexKind::HostBridge)
        v.numaNode = localNode(obj);
      v.data = pciInfoOf(obj, obj->attr->pcidev);
      return add(obj, std::move(v), parent, EdgeKind::PcieLink);
    }
    case HWLOC_OBJ_OS_DEVICE:
      return osDevice(obj, parent);
    default:
      return NoVertex; // Misc (memory modules), memory-side caches
    }
  }

  BridgeRole bridgeRole(VertexId parent, const PciInfo &self) {
    if (parent == NoVertex)
      return BridgeRole::Other;
    const Vertex &p = t_.vertex(parent);
    if (p.kind == VertexKind::HostBridge)
      return BridgeRole::RootPort;
    if (p.kind != VertexKind::PciBridge)
      return BridgeRole::Other;
    const PciInfo *pp = p.as<PciInfo>();
    if (pp->role == BridgeRole::SwitchUpstream && pp->vendorId == self.vendorId)
      return BridgeRole::SwitchDownstream;
    return BridgeRole::SwitchUpstream;
  }

  // The functions of a PCI device: GPU, NIC, NVMe controller, then the OS devices under it.
  void pciChildren(hwloc_obj_t obj, VertexId pciV) {
    const PciInfo pci = *t_.vertex(pciV).as<PciInfo>();
    bool gpu = isGpuPci(pci.vendorId, pci.classId);
    auto mem = gpuMemory_.find(pci.address);
    gpu |= mem != gpuMemory_.end();
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
      gpu |= isGpuOsdev(c);
    VertexId gpuV = NoVertex, nvmeV = NoVertex;
    if (gpu) {
      gpuV = ensureGpu(t_, pciV);
      gpuObjs_[obj] = gpuV;
      if (mem != gpuMemory_.end()) {
        GpuInfo &g = *t_.mutableVertex(gpuV).as<GpuInfo>();
        g.memoryBytes = mem->second;
        if (g.vendor.empty())
          g.vendor = "NVIDIA"; // only NVIDIA's coherent GPU memory appears this way
      }
    }
    if ((pci.classId >> 8) == 0x02) {
      Vertex nic;
      nic.kind = VertexKind::Nic;
      t_.addVertex(std::move(nic), pciV);
    }
    if (pci.classId == 0x0108) {
      Vertex ctl;
      ctl.kind = VertexKind::NvmeController;
      NvmeControllerInfo info;
      info.pci = pci.address;
      info.model = pci.deviceName;
      ctl.data = info;
      nvmeV = t_.addVertex(std::move(ctl), pciV);
    }
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
      if (gpuV != NoVertex && isGpuOsdev(c)) {
        gpuAlias(c, gpuV);
        continue;
      }
      if (gpuV != NoVertex && c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU) {
        gpuAlias(c, gpuV); // DRM card0 / controlD64
        continue;
      }
      if (nvmeV != NoVertex && c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == HWLOC_OBJ_OSDEV_BLOCK &&
          c->name && llvm::StringRef(c->name).starts_with("nvme")) {
        llvm::StringRef ns = c->name;
        Vertex &ctl = t_.mutableVertex(nvmeV);
        if (ctl.name.empty())
          ctl.name = ns.substr(0, ns.find('n', 4)).str(); // nvme0n1 -> nvme0
        walk(c, nvmeV);
        continue;
      }
      walk(c, pciV);
    }
  }

  void gpuAlias(hwloc_obj_t c, VertexId gpuV) {
    objToVertex_[c] = gpuV;
    GpuInfo &g = *t_.mutableVertex(gpuV).as<GpuInfo>();
    if (c->name)
      g.aliases.push_back(c->name);
    if (const char *m = info(c, "GPUModel"); m && g.model.empty())
      g.model = m;
    if (const char *m = info(c, "GPUVendor"); m && g.vendor.empty())
      g.vendor = m;
    if (const char *sm = info(c, "CUDAMultiProcessors"))
      llvm::StringRef(sm).getAsInteger(10, g.smCount);
    if (const char *mem = info(c, "CUDAGlobalMemorySize")) {
      uint64_t kb = 0;
      if (!llvm::StringRef(mem).getAsInteger(10, kb))
        g.memoryBytes = kb * 1024;
    }
    if (const char *cap = info(c, "CUDACapability")) { // not always present
      auto [maj, min] = llvm::StringRef(cap).split('.');
      maj.getAsInteger(10, g.ccMajor);
      min.getAsInteger(10, g.ccMinor);
    }
  }

  VertexId osDevice(hwloc_obj_t obj, VertexId parent) {
    Vertex v;
    v.osIndex = -1;
    v.name = obj->name ? obj->name : "";
    if (parent == NoVertex || t_.vertex(parent).kind < VertexKind::HostBridge)
      v.numaNode = localNode(obj);
    switch (obj->attr->osdev.type) {
    case HWLOC_OBJ_OSDEV_BLOCK: {
      BlockInfo b;
      if (const char *size = info(obj, "Size")) {
        uint64_t kb = 0;
        if (!llvm::StringRef(size).getAsInteger(10, kb))
          b.sizeBytes = kb * 1024;
      }
      if (obj->subtype)
        b.subtype = obj->subtype;
      v.kind = llvm::StringRef(v.name).starts_with("nvme") && parent != NoVertex &&
                       t_.vertex(parent).kind == VertexKind::NvmeController
                   ? VertexKind::NvmeNamespace
                   : VertexKind::BlockDevice;
      v.data = b;
      return add(obj, std::move(v), parent);
    }
    case HWLOC_OBJ_OSDEV_NETWORK: {
      v.kind = VertexKind::NetDevice;
      NetInfo n;
      if (const char *a = info(obj, "Address"))
        n.address = a;
      v.data = n;
      return add(obj, std::move(v), parent);
    }
    case HWLOC_OBJ_OSDEV_OPENFABRICS: {
      v.kind = VertexKind::RdmaDevice;
      RdmaInfo r;
      for (unsigned port = 1; port <= 16; ++port) {
        std::string key = "Port" + std::to_string(port) + "State";
        const char *state = info(obj, key.c_str());
        if (!state)
          break;
        RdmaPort p;
        p.number = port;
        static const char *names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
        unsigned s = 0;
        p.state = !llvm::StringRef(state).getAsInteger(10, s) && s < 6 ? names[s] : state;
        r.ports.push_back(p);
      }
      v.data = std::move(r);
      return add(obj, std::move(v), parent);
    }
    case HWLOC_OBJ_OSDEV_GPU:
    case HWLOC_OBJ_OSDEV_COPROC:
      // GPUs are modelled on their PCI function (pciChildren); a co-processor elsewhere (Xeon Phi
      // "mic0") stays a plain block-less device: skip it.
      return NoVertex;
    default:
      return NoVertex; // DMA engines
    }
  }

  void distances() {
    unsigned nr = 0;
    if (hwloc_distances_get(topo_, &nr, nullptr, 0, 0) != 0 || nr == 0)
      return;
    std::vector<hwloc_distances_s *> all(nr);
    if (hwloc_distances_get(topo_, &nr, all.data(), 0, 0) != 0)
      return;
    bool haveNuma = false;
    for (unsigned d = 0; d < nr; ++d) {
      hwloc_distances_s *m = all[d];
      const char *name = hwloc_distances_get_name(topo_, m);
      llvm::StringRef dname = name ? name : "";
      bool allNuma = true;
      for (unsigned i = 0; i < m->nbobjs; ++i)
        allNuma &= m->objs[i] && m->objs[i]->type == HWLOC_OBJ_NUMANODE;
      if (allNuma && !haveNuma && (m->kind & HWLOC_DISTANCES_KIND_MEANS_LATENCY) &&
          (dname.empty() || dname == "NUMALatency")) {
        haveNuma = true;
        std::vector<unsigned> order;
        for (unsigned i = 0; i < m->nbobjs; ++i)
          order.push_back(m->objs[i]->os_index);
        std::vector<uint64_t> values(m->values, m->values + size_t(m->nbobjs) * m->nbobjs);
        for (unsigned i = 0; i < m->nbobjs; ++i)
          for (unsigned j = 0; j < m->nbobjs; ++j)
            if (i != j) {
              auto a = objToVertex_.find(m->objs[i]), b = objToVertex_.find(m->objs[j]);
              if (a != objToVertex_.end() && b != objToVertex_.end())
                t_.addEdge(a->second, b->second, Edge{EdgeKind::NumaDistance, 1, values[i * m->nbobjs + j]});
            }
        t_.setNumaDistances(std::move(order), std::move(values));
      } else if (dname == "NVLinkBandwidth") {
        for (unsigned i = 0; i < m->nbobjs; ++i)
          for (unsigned j = i + 1; j < m->nbobjs; ++j) {
            uint64_t bw = std::max(m->values[i * m->nbobjs + j], m->values[j * m->nbobjs + i]);
            VertexId a = nvlinkEnd(m->objs[i]), b = nvlinkEnd(m->objs[j]);
            if (bw == 0 || a == NoVertex || b == NoVertex || a == b)
              continue;
            t_.addEdge(a, b, Edge{EdgeKind::NvLink, nvlinksFromBandwidth(bw), bw});
          }
      }
      hwloc_distances_release(topo_, m);
    }
  }

  VertexId nvlinkEnd(hwloc_obj_t o) {
    if (!o)
      return NoVertex;
    if (auto it = gpuObjs_.find(o); it != gpuObjs_.end())
      return it->second;
    auto it = objToVertex_.find(o);
    return it == objToVertex_.end() ? NoVertex : it->second;
  }

  hwloc_topology_t topo_;
  Topology &t_;
  llvm::DenseMap<hwloc_obj_t, VertexId> objToVertex_;
  llvm::DenseMap<hwloc_obj_t, VertexId> gpuObjs_;
  std::map<PciAddress, uint64_t> gpuMemory_;
};

void configure(hwloc_topology_t topo) {
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
}

// The version attribute of <topology ...>, with the line it is on; "" for v1 (no attribute).
struct XmlHeader {
  bool found = false;
  std::string version;
  unsigned line = 0;
};
XmlHeader scanXmlHeader(llvm::StringRef xml) {
  XmlHeader h;
  size_t pos = xml.find("<topology");
  if (pos == llvm::StringRef::npos)
    return h;
  h.found = true;
  h.line = 1 + unsigned(xml.substr(0, pos).count('\n'));
  llvm::StringRef tag = xml.substr(pos, xml.find('>', pos) - pos);
  size_t v = tag.find("version=\"");
  if (v != llvm::StringRef::npos) {
    llvm::StringRef rest = tag.substr(v + 9);
    h.version = rest.substr(0, rest.find('"')).str();
  }
  return h;
}

} // namespace

namespace detail {

bool isGpuPci(uint16_t vendor, uint32_t classId) {
  unsigned base = classId >> 8;
  bool gpuVendor = vendor == 0x10de || vendor == 0x1002;
  return gpuVendor && (base == 0x03 || base == 0x12);
}

unsigned nvlinksFromBandwidth(uint64_t mbps) {
  // hwloc reports NVLink bandwidth in MB/s: 20000 per NVLink 1.0 link, 25000 per link since 2.0.
  if (mbps % 25000 == 0)
    return unsigned(mbps / 25000);
  if (mbps % 20000 == 0)
    return unsigned(mbps / 20000);
  return std::max<unsigned>(1, unsigned((mbps + 12500) / 25000));
}

VertexId ensureGpu(Topology &t, VertexId pciFunction) {
  for (auto [it, end] = boost::out_edges(pciFunction, t.graph()); it != end; ++it) {
    VertexId c = boost::target(*it, t.graph());
    if (t.vertex(c).kind == VertexKind::Gpu)
      return c;
  }
  const PciInfo &pci = *t.vertex(pciFunction).as<PciInfo>();
  Vertex v;
  v.kind = VertexKind::Gpu;
  GpuInfo g;
  g.pci = pci.address;
  g.vendor = pci.vendorId == 0x10de ? "NVIDIA" : pci.vendorId == 0x1002 ? "AMD" : pci.vendorName;
  g.model = pci.deviceName;
  // Without a driver the PCI device ID still tells SMs, memory and capability of known models.
  if (pci.vendorId == 0x10de)
    if (std::optional<GpuModelFacts> facts = nvidiaGpuByDeviceId(pci.deviceId)) {
      g.smCount = facts->smCount;
      g.memoryBytes = facts->memoryBytes;
      g.ccMajor = facts->ccMajor;
      g.ccMinor = facts->ccMinor;
      if (g.model.empty())
        g.model = facts->name;
    }
  v.data = std::move(g);
  return t.addVertex(std::move(v), pciFunction);
}

} // namespace detail

std::optional<Topology> loadHwlocXmlBuffer(llvm::StringRef xml, llvm::StringRef name, DiagnosticEngine &diags) {
  XmlHeader header = scanXmlHeader(xml);
  if (!header.found) {
    diags.report(DiagCode::ERR_HAL_TOPO_003, Location{{}, name.str(), 0})
        << name << "no <topology> element (not an hwloc XML export)";
    return std::nullopt;
  }
  if (!header.version.empty()) {
    unsigned major = 0;
    llvm::StringRef(header.version).split('.').first.getAsInteger(10, major);
    if (major > 2) {
      diags.report(DiagCode::ERR_HAL_TOPO_002, Location{{}, name.str(), header.line}) << header.version;
      return std::nullopt;
    }
  }
  HwlocHandle h;
  if (hwloc_topology_init(&h.topo) != 0) {
    diags.report(DiagCode::ERR_HAL_TOPO_003, Location{{}, name.str(), 0}) << name << "hwloc_topology_init failed";
    return std::nullopt;
  }
  configure(h.topo);
  std::string buffer = xml.str();
  if (hwloc_topology_set_xmlbuffer(h.topo, buffer.c_str(), int(buffer.size() + 1)) != 0 ||
      hwloc_topology_load(h.topo) != 0) {
    int err = errno;
    diags.report(DiagCode::ERR_HAL_TOPO_003, Location{{}, name.str(), 0})
        << name << (std::string("the XML is malformed or inconsistent (") + std::strerror(err) + ")");
    return std::nullopt;
  }
  Topology t;
  HwlocConverter(h.topo, t).run();
  t.reindex();
  return t;
}

std::optional<Topology> loadHwlocXmlFile(llvm::StringRef path, DiagnosticEngine &diags) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf) {
    diags.report(DiagCode::ERR_HAL_TOPO_001, Location{{}, path.str(), 0}) << path << buf.getError().message();
    return std::nullopt;
  }
  return loadHwlocXmlBuffer((*buf)->getBuffer(), path, diags);
}

std::optional<Topology> discoverLive(const LiveOptions &options, DiagnosticEngine &diags) {
  std::string root = options.sysfsRoot.empty() ? "/" : options.sysfsRoot;
  bool live = root == "/";
  if (!live && !llvm::sys::fs::is_directory(root + "/sys")) {
    diags.report(DiagCode::ERR_HAL_TOPO_001, Location{{}, root, 0})
        << root << "not a sysfs root (no 'sys' directory in it)";
    return std::nullopt;
  }
  HwlocHandle h;
  Topology t;
  {
    ScopedEnv env;
    // Keep GPU memory exposed as NUMA nodes (POWER9/Grace): it is memory a job can bind to.
    env.set("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES", "1");
    if (!live) {
      env.set("HWLOC_FSROOT", root.c_str());
      env.set("HWLOC_COMPONENTS", "linux,stop");
    }
    if (hwloc_topology_init(&h.topo) != 0) {
      diags.report(DiagCode::ERR_HAL_TOPO_003, Location{{}, root, 0}) << root << "hwloc_topology_init failed";
      return std::nullopt;
    }
    configure(h.topo);
    if (hwloc_topology_load(h.topo) != 0) {
      int err = errno;
      diags.report(DiagCode::ERR_HAL_TOPO_003, Location{{}, root, 0}) << root << std::strerror(err);
      return std::nullopt;
    }
  }
  HwlocConverter(h.topo, t).run();
  addSysfsFacts(t, root, diags);
  if (live && options.probeGpus)
    addCudaFacts(t);
  if (live && options.probeVerbs)
    addVerbsFacts(t);
  t.reindex();
  return t;
}

} // namespace msc::hal
