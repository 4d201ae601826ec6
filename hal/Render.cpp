#include "hal/Render.h"

#include "support/CpuList.h"
#include "support/Quantity.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>

namespace msc::hal {
namespace {

std::string bytes(uint64_t b) { return formatMeasuredBytes(b); }

std::string hex4(unsigned a, unsigned b, const char *sep = ":") {
  char buf[32];
  snprintf(buf, sizeof buf, sep[0] ? "%04x%s%04x" : "%02x%s%02x", a, sep, b);
  return buf;
}

std::string gbps(double rate) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", rate);
  return buf;
}

std::string celsius(int64_t milli) { return llvm::formatv("{0:f1} C", double(milli) / 1000.0).str(); }

bool important(VertexKind k) {
  return k == VertexKind::Gpu || k == VertexKind::RdmaDevice || k == VertexKind::NvmeController ||
         k == VertexKind::Nic;
}

std::string details(const Topology &t, VertexId v) {
  const Vertex &x = t.vertex(v);
  std::string out = t.label(v);
  switch (x.kind) {
  case VertexKind::NumaNode: {
    const NumaInfo &n = *x.as<NumaInfo>();
    out += " (" + bytes(n.memoryBytes);
    if (!n.subtype.empty())
      out += ", " + n.subtype;
    for (const HugepagePool &h : n.hugepages)
      out += ", " + bytes(h.pageSize) + " pages " + h.freeText();
    out += ")";
    break;
  }
  case VertexKind::Cache: {
    const CacheInfo &c = *x.as<CacheInfo>();
    out = "L" + std::to_string(c.level) + (c.type == 'U' ? "" : std::string(1, char(c.type + 32))) + " (" +
          bytes(c.sizeBytes) + ")";
    break;
  }
  case VertexKind::PciDevice:
  case VertexKind::PciBridge: {
    const PciInfo &p = *x.as<PciInfo>();
    out += " [" + hex4(p.vendorId, p.deviceId) + "] class " + hex4(p.classId >> 8, p.classId & 0xff, "");
    if (x.kind == VertexKind::PciBridge)
      out += p.role == BridgeRole::RootPort         ? " root port"
             : p.role == BridgeRole::SwitchUpstream ? " switch"
             : p.role == BridgeRole::SwitchDownstream ? " switch port"
                                                      : "";
    break;
  }
  case VertexKind::Gpu: {
    const GpuInfo &g = *x.as<GpuInfo>();
    for (const GpuRef &r : t.gpus())
      if (r.vertex == v)
        out = "GPU" + std::to_string(r.index) + " " + g.pci.str();
    out += " " + (g.vendor.empty() ? std::string() : g.vendor + " ") + (g.model.empty() ? "(model unknown)" : g.model);
    if (g.smCount)
      out += ", " + std::to_string(g.smCount) + " SMs";
    if (g.memoryBytes)
      out += ", " + bytes(g.memoryBytes);
    if (g.ccMajor >= 0)
      out += ", sm_" + std::to_string(g.ccMajor) + std::to_string(g.ccMinor);
    if (!g.aliases.empty())
      out += " (" + llvm::join(g.aliases, ", ") + ")";
    break;
  }
  case VertexKind::RdmaDevice:
    for (const RdmaPort &p : x.as<RdmaInfo>()->ports)
      out += " port" + std::to_string(p.number) + "=" + p.state +
             (p.rateGbps > 0 ? "/" + gbps(p.rateGbps) + "Gbps" : "");
    break;
  case VertexKind::NvmeController: {
    const NvmeControllerInfo &n = *x.as<NvmeControllerInfo>();
    if (!x.name.empty())
      out = "NVMe " + x.name + " " + n.pci.str();
    if (n.queueCount)
      out += ", " + std::to_string(*n.queueCount) + " I/O queues";
    if (n.queueDepth)
      out += ", depth " + std::to_string(*n.queueDepth);
    break;
  }
  case VertexKind::NvmeNamespace:
  case VertexKind::NvmePartition:
  case VertexKind::BlockDevice:
    if (uint64_t b = x.as<BlockInfo>()->sizeBytes)
      out += " (" + bytes(b) + ")";
    break;
  case VertexKind::ThermalSensor: {
    const ThermalInfo &th = *x.as<ThermalInfo>();
    out += " " + celsius(th.tempMilliC) + (th.limitMilliC ? " (limit " + celsius(*th.limitMilliC) + ")" : "");
    break;
  }
  default:
    break;
  }
  if ((x.kind == VertexKind::HostBridge) && x.numaNode >= 0)
    out += " (NUMA " + std::to_string(x.numaNode) + ")";
  return out;
}

void printNode(const Topology &t, VertexId v, unsigned depth, llvm::raw_ostream &os, const TreeOptions &opt) {
  const Vertex &x = t.vertex(v);
  if (x.kind == VertexKind::Cache && !opt.caches) {
    for (VertexId c : t.children(v))
      printNode(t, c, depth, os, opt);
    return;
  }
  if (x.kind == VertexKind::Nic)
    return; // a marker on its PCI function, shown there
  bool mark = important(x.kind);
  for (VertexId c : t.children(v))
    mark |= x.kind == VertexKind::PciDevice && important(t.vertex(c).kind);
  os << (mark ? "* " : "  ") << std::string(depth * 2, ' ');
  if (x.kind == VertexKind::Core) {
    // "Core L#3: PU P#3 P#131": cores print their PUs on one line
    os << "Core";
    for (VertexId c : t.children(v))
      if (t.vertex(c).kind == VertexKind::Pu)
        os << " PU P#" << t.vertex(c).osIndex;
    os << "\n";
    return;
  }
  os << details(t, v) << "\n";
  for (VertexId c : t.children(v))
    printNode(t, c, depth + 1, os, opt);
}

} // namespace

Summary summarize(const Topology &t) {
  Summary s;
  s.packages = t.count(VertexKind::Package);
  s.numaNodes = t.count(VertexKind::NumaNode);
  s.cores = t.count(VertexKind::Core);
  s.pus = t.count(VertexKind::Pu);
  s.gpus = t.count(VertexKind::Gpu);
  s.nics = t.count(VertexKind::Nic);
  s.rdma = t.count(VertexKind::RdmaDevice);
  s.nvme = t.count(VertexKind::NvmeController);
  return s;
}

void printTree(const Topology &t, llvm::raw_ostream &os, const TreeOptions &options) {
  Summary s = summarize(t);
  os << "topology" << (t.name().empty() ? "" : " of " + t.name()) << ": " << s.packages << " package(s), "
     << s.numaNodes << " NUMA node(s), " << s.cores << " core(s), " << s.pus << " PU(s), " << s.gpus
     << " GPU(s), " << s.nics << " NIC(s), " << s.rdma << " RDMA device(s), " << s.nvme << " NVMe controller(s)\n";
  if (t.root() != NoVertex)
    printNode(t, t.root(), 0, os, options);
  if (!t.kernelCmdline().empty()) {
    os << "kernel command line: " << t.kernelCmdline() << "\n";
    os << "isolated CPUs: " << (t.isolatedCpus().empty() ? "none" : formatCpuList(t.isolatedCpus()))
       << "; nohz_full: " << (t.nohzFullCpus().empty() ? "none" : formatCpuList(t.nohzFullCpus())) << "\n";
  }
  for (const std::string &note : t.notes())
    os << "note: " << note << "\n";
}

static llvm::json::Object vertexJson(const Topology &t, VertexId v) {
  const Vertex &x = t.vertex(v);
  llvm::json::Object o{{"kind", kindName(x.kind)}, {"label", t.label(v)}};
  if (!x.name.empty())
    o["name"] = x.name;
  if (x.osIndex >= 0)
    o["os_index"] = x.osIndex;
  if (auto n = t.numaNodeOfDevice(v); n && x.kind >= VertexKind::HostBridge)
    o["numa_node"] = int64_t(*n);
  if (const PciInfo *p = x.as<PciInfo>()) {
    o["pci"] = p->address.str();
    o["pci_id"] = hex4(p->vendorId, p->deviceId);
    o["class"] = hex4(p->classId >> 8, p->classId & 0xff, "");
  }
  if (const GpuInfo *g = x.as<GpuInfo>()) {
    o["pci"] = g->pci.str();
    o["model"] = g->model;
    o["vendor"] = g->vendor;
    if (g->smCount)
      o["sm_count"] = int64_t(g->smCount);
    if (g->memoryBytes)
      o["memory_bytes"] = int64_t(g->memoryBytes);
    if (g->temperatureMilliC)
      o["temperature_mc"] = *g->temperatureMilliC;
  }
  if (const NumaInfo *n = x.as<NumaInfo>()) {
    o["memory_bytes"] = int64_t(n->memoryBytes);
    o["cpus"] = formatCpuList(n->cpus);
  }
  llvm::json::Array kids;
  for (VertexId c : t.children(v))
    kids.push_back(vertexJson(t, c));
  if (!kids.empty())
    o["children"] = std::move(kids);
  return o;
}

llvm::json::Value topologyJson(const Topology &t) {
  Summary s = summarize(t);
  llvm::json::Object root{{"name", t.name()},
                          {"fingerprint", llvm::utohexstr(t.fingerprint(), true)},
                          {"counts",
                           llvm::json::Object{{"packages", int64_t(s.packages)},
                                              {"numa_nodes", int64_t(s.numaNodes)},
                                              {"cores", int64_t(s.cores)},
                                              {"pus", int64_t(s.pus)},
                                              {"gpus", int64_t(s.gpus)},
                                              {"nics", int64_t(s.nics)},
                                              {"rdma", int64_t(s.rdma)},
                                              {"nvme", int64_t(s.nvme)}}},
                          {"kernel_cmdline", t.kernelCmdline()},
                          {"isolated_cpus", formatCpuList(t.isolatedCpus())},
                          {"nohz_full_cpus", formatCpuList(t.nohzFullCpus())}};
  if (t.root() != NoVertex)
    root["tree"] = vertexJson(t, t.root());
  llvm::json::Array notes;
  for (const std::string &n : t.notes())
    notes.push_back(n);
  root["notes"] = std::move(notes);
  return root;
}

namespace {
struct SensorRow {
  std::string name;
  int64_t temp;
  std::optional<int64_t> limit;
  std::string status;
};
std::vector<SensorRow> sensors(const Topology &t) {
  std::vector<SensorRow> out;
  auto status = [](int64_t temp, std::optional<int64_t> limit) -> std::string {
    if (!limit)
      return "no limit";
    if (temp >= *limit)
      return "CRITICAL";
    if (temp >= *limit - ThermalWarnMarginMilliC)
      return "WARN";
    return "ok";
  };
  for (VertexId v : t.thermalSensors()) {
    const ThermalInfo &th = *t.vertex(v).as<ThermalInfo>();
    out.push_back({t.vertex(v).name, th.tempMilliC, th.limitMilliC, status(th.tempMilliC, th.limitMilliC)});
  }
  for (const GpuRef &g : t.gpus())
    if (g.info->temperatureMilliC && !llvm::any_of(out, [&](auto &r) { return r.name == "gpu/" + g.info->pci.str(); }))
      out.push_back({"GPU" + std::to_string(g.index), *g.info->temperatureMilliC, std::nullopt, "no limit"});
  return out;
}
} // namespace

void printHealth(const Topology &t, llvm::raw_ostream &os) {
  os << "temperatures:\n";
  auto rows = sensors(t);
  if (rows.empty())
    os << "  absent: no thermal zones, hwmon sensors or GPU sensors found\n";
  for (const SensorRow &r : rows)
    os << "  " << llvm::left_justify(r.name, 32) << llvm::right_justify(celsius(r.temp), 9) << "  limit "
       << llvm::right_justify(r.limit ? celsius(*r.limit) : "-", 9) << "  " << r.status << "\n";

  os << "hugepages (free/total per NUMA node):\n";
  bool anyPool = false;
  for (unsigned n : t.numaNodes()) {
    const NumaInfo &info = *t.numaInfo(n);
    for (const HugepagePool &h : info.hugepages) {
      anyPool = true;
      os << "  node " << n << "  " << llvm::left_justify(bytes(h.pageSize), 10) << " " << h.freeText() << "\n";
    }
  }
  if (!anyPool)
    os << "  absent: no hugepage pools reported\n";

  os << "GPUs:\n";
  if (t.gpus().empty())
    os << "  absent: no GPU found\n";
  for (const GpuRef &g : t.gpus())
    os << "  GPU" << g.index << " " << g.info->pci.str() << " " << (g.info->model.empty() ? "(model unknown)" : g.info->model)
       << "  NUMA " << (t.numaNodeOfDevice(g.vertex) ? std::to_string(*t.numaNodeOfDevice(g.vertex)) : "?") << "\n";

  os << "RDMA:\n";
  if (t.count(VertexKind::RdmaDevice) == 0)
    os << "  absent: no RDMA device found\n";
  for (VertexId v : t.verticesOf(VertexKind::RdmaDevice)) {
    const RdmaInfo &r = *t.vertex(v).as<RdmaInfo>();
    if (r.ports.empty())
      os << "  " << t.vertex(v).name << ": no port information\n";
    for (const RdmaPort &p : r.ports) {
      os << "  " << t.vertex(v).name << " port " << p.number << ": " << (p.state.empty() ? "?" : p.state);
      if (!p.linkLayer.empty())
        os << ", " << p.linkLayer;
      if (p.rateGbps > 0)
        os << ", " << gbps(p.rateGbps) << " Gb/s";
      uint64_t errors = 0;
      for (auto &[name, value] : p.errorCounters)
        errors += value;
      if (!p.errorCounters.empty())
        os << ", error counters total " << errors;
      os << "\n";
      for (auto &[name, value] : p.errorCounters)
        if (value)
          os << "    " << name << " = " << value << "\n";
    }
  }

  os << "NVMe:\n";
  if (t.count(VertexKind::NvmeController) == 0)
    os << "  absent: no NVMe controller found\n";
  for (VertexId v : t.verticesOf(VertexKind::NvmeController)) {
    const NvmeControllerInfo &n = *t.vertex(v).as<NvmeControllerInfo>();
    os << "  " << (t.vertex(v).name.empty() ? "nvme?" : t.vertex(v).name) << " " << n.pci.str() << " present";
    for (VertexId ns : t.children(v))
      if (t.vertex(ns).kind == VertexKind::NvmeNamespace)
        os << ", " << t.vertex(ns).name;
    os << "\n";
  }
  for (const std::string &note : t.notes())
    os << "note: " << note << "\n";
}

llvm::json::Value healthJson(const Topology &t) {
  llvm::json::Array temps, pools, rdma, nvme, gpus, notes;
  for (const SensorRow &r : sensors(t)) {
    llvm::json::Object o{{"name", r.name}, {"temp_mc", r.temp}, {"status", r.status}};
    if (r.limit)
      o["limit_mc"] = *r.limit;
    temps.push_back(std::move(o));
  }
  for (unsigned n : t.numaNodes())
    for (const HugepagePool &h : t.numaInfo(n)->hugepages) {
      llvm::json::Object o{{"numa_node", int64_t(n)}, {"page_size", int64_t(h.pageSize)}, {"total", int64_t(h.total)}};
      if (h.free)
        o["free"] = int64_t(*h.free);
      pools.push_back(std::move(o));
    }
  for (const GpuRef &g : t.gpus())
    gpus.push_back(llvm::json::Object{{"index", int64_t(g.index)}, {"pci", g.info->pci.str()}, {"model", g.info->model}});
  for (VertexId v : t.verticesOf(VertexKind::RdmaDevice))
    for (const RdmaPort &p : t.vertex(v).as<RdmaInfo>()->ports) {
      llvm::json::Object counters;
      for (auto &[name, value] : p.errorCounters)
        counters[name] = int64_t(value);
      rdma.push_back(llvm::json::Object{{"device", t.vertex(v).name},
                                        {"port", int64_t(p.number)},
                                        {"state", p.state},
                                        {"link_layer", p.linkLayer},
                                        {"rate_gbps", p.rateGbps},
                                        {"error_counters", std::move(counters)}});
    }
  for (VertexId v : t.verticesOf(VertexKind::NvmeController))
    nvme.push_back(llvm::json::Object{{"controller", t.vertex(v).name},
                                      {"pci", t.vertex(v).as<NvmeControllerInfo>()->pci.str()}});
  for (const std::string &n : t.notes())
    notes.push_back(n);
  return llvm::json::Object{{"temperatures", std::move(temps)}, {"hugepages", std::move(pools)},
                            {"gpus", std::move(gpus)},          {"rdma_ports", std::move(rdma)},
                            {"nvme", std::move(nvme)},          {"notes", std::move(notes)}};
}

} // namespace msc::hal
