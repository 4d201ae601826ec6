// sysfs and procfs facts hwloc does not give, read relative to a root ("/" or a recorded tree).
#include "hal/detail/Probes.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <map>

namespace msc::hal::detail {

std::string joinRoot(llvm::StringRef root, llvm::StringRef path) {
  if (root.empty() || root == "/")
    return path.str();
  std::string out = root.rtrim('/').str();
  if (!path.starts_with("/"))
    out += '/';
  return out + path.str();
}

std::string rdmaPortState(llvm::StringRef stateFileText) {
  llvm::StringRef state = stateFileText.split(':').second.trim();
  return state.empty() ? stateFileText.str() : state.str();
}

std::optional<std::string> readFileAt(llvm::StringRef root, llvm::StringRef path) {
  // sysfs files report a size of 4096 whatever they hold: read as a stream.
  auto buf = llvm::MemoryBuffer::getFileAsStream(joinRoot(root, path));
  if (!buf)
    return std::nullopt;
  return (*buf)->getBuffer().trim().str();
}

namespace {

std::vector<std::string> listDir(llvm::StringRef root, llvm::StringRef path) {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(joinRoot(root, path), ec), end; it != end && !ec; it.increment(ec))
    out.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(out.begin(), out.end());
  return out;
}

template <typename T> std::optional<T> readNumber(llvm::StringRef root, llvm::StringRef path, unsigned radix = 10) {
  auto text = readFileAt(root, path);
  if (!text)
    return std::nullopt;
  llvm::StringRef s = *text;
  if (radix == 16)
    s.consume_front("0x");
  T value{};
  if (s.getAsInteger(radix, value))
    return std::nullopt;
  return value;
}

VertexId machineOf(const Topology &t) { return t.root(); }

void addHugepages(Topology &t, llvm::StringRef root) {
  for (unsigned node : t.numaNodes()) {
    std::string dir = "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages";
    std::vector<std::string> pools = listDir(root, dir);
    if (pools.empty())
      continue;
    NumaInfo &info = *t.mutableVertex(t.numaVertex(node)).as<NumaInfo>();
    std::vector<HugepagePool> out;
    for (const std::string &pool : pools) {
      llvm::StringRef kb = pool;
      uint64_t size = 0;
      if (!kb.consume_front("hugepages-") || !kb.consume_back("kB") || kb.getAsInteger(10, size))
        continue;
      HugepagePool p;
      p.pageSize = size * 1024;
      p.total = readNumber<uint64_t>(root, dir + "/" + pool + "/nr_hugepages").value_or(0);
      p.free = readNumber<uint64_t>(root, dir + "/" + pool + "/free_hugepages");
      out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](auto &a, auto &b) { return a.pageSize < b.pageSize; });
    info.hugepages = std::move(out);
  }
}

void addNvme(Topology &t, llvm::StringRef root) {
  std::vector<std::string> blocks = listDir(root, "/sys/class/block");
  for (VertexId ctl : std::vector<VertexId>(t.verticesOf(VertexKind::NvmeController))) {
    std::string ctlName = t.vertex(ctl).name;
    NvmeControllerInfo info = *t.vertex(ctl).as<NvmeControllerInfo>();
    if (!ctlName.empty()) {
      if (auto qc = readNumber<unsigned>(root, "/sys/class/nvme/" + ctlName + "/queue_count"))
        info.queueCount = *qc > 0 ? *qc - 1 : 0; // the admin queue is counted too
      if (auto sq = readNumber<unsigned>(root, "/sys/class/nvme/" + ctlName + "/sqsize"))
        info.queueDepth = *sq + 1; // sqsize is 0-based
      if (auto model = readFileAt(root, "/sys/class/nvme/" + ctlName + "/model"))
        info.model = *model;
    }
    for (VertexId ns : std::vector<VertexId>(t.children(ctl))) {
      if (t.vertex(ns).kind != VertexKind::NvmeNamespace)
        continue;
      std::string nsName = t.vertex(ns).name;
      if (auto sectors = readNumber<uint64_t>(root, "/sys/class/block/" + nsName + "/size"))
        t.mutableVertex(ns).as<BlockInfo>()->sizeBytes = *sectors * 512;
      if (!info.queueCount) {
        size_t mq = listDir(root, "/sys/class/block/" + nsName + "/mq").size();
        if (mq)
          info.queueCount = unsigned(mq);
      }
      if (!info.queueDepth)
        info.queueDepth = readNumber<unsigned>(root, "/sys/class/block/" + nsName + "/queue/nr_requests");
      for (const std::string &b : blocks) {
        llvm::StringRef rest = b;
        if (!rest.consume_front(nsName) || !rest.consume_front("p") || rest.empty() ||
            !llvm::all_of(rest, llvm::isDigit))
          continue;
        Vertex part;
        part.kind = VertexKind::NvmePartition;
        part.name = b;
        BlockInfo bi;
        bi.sizeBytes = readNumber<uint64_t>(root, "/sys/class/block/" + b + "/size").value_or(0) * 512;
        bi.subtype = "Partition";
        part.data = bi;
        t.addVertex(std::move(part), ns);
      }
    }
    *t.mutableVertex(ctl).as<NvmeControllerInfo>() = info;
  }
}

double parseRate(llvm::StringRef rate) {
  // "56 Gb/sec (4X FDR)", "100 Gb/sec (4X EDR)"
  double value = 0;
  llvm::StringRef num = rate.trim().split(' ').first;
  if (num.getAsDouble(value))
    return 0;
  return value;
}

void addRdma(Topology &t, llvm::StringRef root) {
  for (const std::string &dev : listDir(root, "/sys/class/infiniband")) {
    std::string base = "/sys/class/infiniband/" + dev;
    RdmaInfo info;
    for (const std::string &port : listDir(root, base + "/ports")) {
      RdmaPort p;
      if (llvm::StringRef(port).getAsInteger(10, p.number))
        continue;
      std::string pb = base + "/ports/" + port;
      p.state = rdmaPortState(readFileAt(root, pb + "/state").value_or(""));
      p.linkLayer = readFileAt(root, pb + "/link_layer").value_or("");
      p.rateGbps = parseRate(readFileAt(root, pb + "/rate").value_or(""));
      for (const std::string &c : listDir(root, pb + "/counters")) {
        llvm::StringRef cn = c;
        if (!cn.contains("error") && !cn.contains("discard") && cn != "link_downed" &&
            cn != "VL15_dropped" && !cn.contains("overrun"))
          continue;
        if (auto v = readNumber<uint64_t>(root, pb + "/counters/" + c))
          p.errorCounters.emplace_back(c, *v);
      }
      info.ports.push_back(std::move(p));
    }
    t.reindex();
    VertexId v = t.findDevice(dev);
    if (v == NoVertex || t.vertex(v).kind != VertexKind::RdmaDevice) {
      // hwloc did not attach it: place it under its PCI function. Devices without one (scif0 of
      // a Xeon Phi, rxe soft-RoCE) are not hardware ports a job can be placed near: leave them.
      VertexId parent = NoVertex;
      llvm::SmallString<256> target;
      if (!llvm::sys::fs::real_path(joinRoot(root, base + "/device"), target)) {
        if (auto addr = parsePciAddress(llvm::sys::path::filename(target)))
          parent = t.findPci(*addr);
      }
      if (parent == NoVertex) {
        t.addNote("RDMA device " + dev + " has no PCI function; not modelled");
        continue;
      }
      Vertex rv;
      rv.kind = VertexKind::RdmaDevice;
      rv.name = dev;
      rv.data = RdmaInfo{};
      v = t.addVertex(std::move(rv), parent);
    }
    RdmaInfo &existing = *t.mutableVertex(v).as<RdmaInfo>();
    if (!info.ports.empty())
      existing = std::move(info);
  }
}

void addThermal(Topology &t, llvm::StringRef root) {
  VertexId machine = machineOf(t);
  auto addSensor = [&](std::string name, int64_t temp, std::optional<int64_t> limit, std::string source) {
    Vertex v;
    v.kind = VertexKind::ThermalSensor;
    v.name = std::move(name);
    v.data = ThermalInfo{temp, limit, std::move(source)};
    t.addVertex(std::move(v), machine);
  };
  for (const std::string &zone : listDir(root, "/sys/class/thermal")) {
    if (!llvm::StringRef(zone).starts_with("thermal_zone"))
      continue;
    std::string base = "/sys/class/thermal/" + zone;
    auto temp = readNumber<int64_t>(root, base + "/temp");
    if (!temp)
      continue;
    std::optional<int64_t> limit;
    for (unsigned i = 0; i < 16; ++i) {
      auto type = readFileAt(root, base + "/trip_point_" + std::to_string(i) + "_type");
      if (!type)
        break;
      if (*type == "critical" || (*type == "hot" && !limit))
        limit = readNumber<int64_t>(root, base + "/trip_point_" + std::to_string(i) + "_temp");
    }
    addSensor(readFileAt(root, base + "/type").value_or(zone), *temp, limit, zone);
  }
  for (const std::string &hw : listDir(root, "/sys/class/hwmon")) {
    std::string base = "/sys/class/hwmon/" + hw;
    std::string chip = readFileAt(root, base + "/name").value_or(hw);
    for (const std::string &f : listDir(root, base)) {
      llvm::StringRef fn = f;
      if (!fn.starts_with("temp") || !fn.ends_with("_input"))
        continue;
      std::string stem = fn.drop_back(6).str(); // temp1
      auto temp = readNumber<int64_t>(root, base + "/" + f);
      if (!temp)
        continue;
      std::optional<int64_t> limit = readNumber<int64_t>(root, base + "/" + stem + "_crit");
      if (!limit)
        limit = readNumber<int64_t>(root, base + "/" + stem + "_max");
      std::string label = readFileAt(root, base + "/" + stem + "_label").value_or(stem);
      addSensor(chip + "/" + label, *temp, limit, hw + "/" + stem);
    }
  }
}

// hwloc built for 16-bit domains skips functions such as 10000:00:04.0 (VMD, some hypervisors).
void addWidePciDomains(Topology &t, llvm::StringRef root, DiagnosticEngine &diags) {
  t.reindex();
  std::map<PciBus, VertexId> bridges;
  unsigned added = 0;
  for (const std::string &entry : listDir(root, "/sys/bus/pci/devices")) {
    auto addr = parsePciAddress(entry);
    if (!addr || addr->domain <= 0xffff || t.findPci(*addr) != NoVertex)
      continue;
    std::string base = "/sys/bus/pci/devices/" + entry;
    int numa = readNumber<int>(root, base + "/numa_node").value_or(-1);
    PciBus bus{addr->domain, addr->bus};
    auto it = bridges.find(bus);
    if (it == bridges.end()) {
      Vertex hb;
      hb.kind = VertexKind::HostBridge;
      hb.numaNode = numa;
      hb.data = HostBridgeInfo{addr->domain, addr->bus, addr->bus};
      it = bridges.emplace(bus, t.addVertex(std::move(hb), t.root())).first;
    }
    Vertex dev;
    dev.kind = VertexKind::PciDevice;
    PciInfo pi;
    pi.address = *addr;
    pi.vendorId = readNumber<uint16_t>(root, base + "/vendor", 16).value_or(0);
    pi.deviceId = readNumber<uint16_t>(root, base + "/device", 16).value_or(0);
    pi.classId = readNumber<uint32_t>(root, base + "/class", 16).value_or(0) >> 8;
    dev.data = pi;
    VertexId v = t.addVertex(std::move(dev), it->second, EdgeKind::PcieLink);
    if (isGpuPci(pi.vendorId, pi.classId))
      ensureGpu(t, v);
    ++added;
  }
  if (added)
    diags.report(DiagCode::WRN_HAL_TOPO_001, Location{{}, joinRoot(root, "/sys/bus/pci/devices"), 0}) << added;
}

// /proc/driver/nvidia/gpus/<bdf>/information: "Model: Tesla V100-SXM2-16GB".
void addNvidiaProcInfo(Topology &t, llvm::StringRef root) {
  for (const std::string &bdf : listDir(root, "/proc/driver/nvidia/gpus")) {
    auto addr = parsePciAddress(bdf);
    if (!addr)
      continue;
    VertexId pci = t.findPci(*addr);
    if (pci == NoVertex)
      continue;
    VertexId g = ensureGpu(t, pci);
    auto text = readFileAt(root, "/proc/driver/nvidia/gpus/" + bdf + "/information");
    if (!text)
      continue;
    llvm::SmallVector<llvm::StringRef, 16> lines;
    llvm::StringRef(*text).split(lines, '\n');
    for (llvm::StringRef line : lines) {
      auto [key, value] = line.split(':');
      if (key.trim() == "Model")
        t.mutableVertex(g).as<GpuInfo>()->model = value.trim().str();
    }
    t.mutableVertex(g).as<GpuInfo>()->vendor = "NVIDIA";
  }
}

} // namespace

void addSysfsFacts(Topology &t, llvm::StringRef root, DiagnosticEngine &diags) {
  t.reindex();
  if (auto cmdline = readFileAt(root, "/proc/cmdline"))
    t.setKernelCmdline(*cmdline);
  addHugepages(t, root);
  addWidePciDomains(t, root, diags);
  t.reindex();
  addNvidiaProcInfo(t, root);
  addNvme(t, root);
  addRdma(t, root);
  addThermal(t, root);
  t.reindex();
}

} // namespace msc::hal::detail
