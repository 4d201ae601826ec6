// Re-reads the few facts of a live topology that change while a node runs; see LiveRefresh.h.
// The paths are the ones SysfsProbe.cpp discovered them from.
#include "hal/LiveRefresh.h"

#include "hal/detail/Probes.h"
#include "support/CpuList.h"

namespace msc::hal {
namespace {

std::optional<uint64_t> readU64(llvm::StringRef root, const std::string &path) {
  std::optional<std::string> text = detail::readFileAt(root, path);
  uint64_t v = 0;
  if (!text || llvm::StringRef(*text).getAsInteger(10, v))
    return std::nullopt;
  return v;
}

std::optional<int64_t> readI64(llvm::StringRef root, const std::string &path) {
  std::optional<std::string> text = detail::readFileAt(root, path);
  int64_t v = 0;
  if (!text || llvm::StringRef(*text).getAsInteger(10, v))
    return std::nullopt;
  return v;
}

// "thermal_zone3" -> its temp file; "hwmon1/temp2" -> hwmon1's temp2_input.
std::string thermalInput(llvm::StringRef source) {
  if (source.starts_with("thermal_zone"))
    return "/sys/class/thermal/" + source.str() + "/temp";
  return "/sys/class/hwmon/" + source.str() + "_input";
}

// The re-read values, in the order the topology is walked; applied to a copy when any differs.
struct Facts {
  std::vector<HugepagePool> pools;   // every NUMA node's pools, node by node
  std::vector<int64_t> temperatures; // every thermal sensor
  std::vector<std::string> portStates; // every RDMA port
};

} // namespace

LiveRefresh refreshLiveFacts(const Topology &current, llvm::StringRef root, std::optional<Topology> &updated) {
  // Online CPUs: a PU that came or went changes the tree hwloc builds, so it takes a discovery.
  if (std::optional<std::string> online = detail::readFileAt(root, "/sys/devices/system/cpu/online")) {
    std::optional<std::vector<unsigned>> cpus = parseCpuList(*online);
    if (!cpus)
      return LiveRefresh::Rediscover;
    std::vector<unsigned> known;
    for (unsigned pu : current.pus())
      if (current.isPuOnline(pu))
        known.push_back(pu);
    if (*cpus != known)
      return LiveRefresh::Rediscover;
  }

  Facts facts;
  bool changed = false;
  for (unsigned node : current.numaNodes()) {
    const NumaInfo *info = current.numaInfo(node);
    for (const HugepagePool &pool : info ? info->hugepages : std::vector<HugepagePool>{}) {
      std::string dir = "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/hugepages-" +
                        std::to_string(pool.pageSize / 1024) + "kB";
      std::optional<uint64_t> total = readU64(root, dir + "/nr_hugepages");
      if (!total)
        return LiveRefresh::Rediscover;
      HugepagePool now{pool.pageSize, *total, readU64(root, dir + "/free_hugepages")};
      changed |= !(now == pool);
      facts.pools.push_back(now);
    }
  }
  for (VertexId v : current.thermalSensors()) {
    const ThermalInfo *info = current.vertex(v).as<ThermalInfo>();
    std::optional<int64_t> temp = info ? readI64(root, thermalInput(info->source)) : std::nullopt;
    if (!temp)
      return LiveRefresh::Rediscover;
    changed |= *temp != info->tempMilliC;
    facts.temperatures.push_back(*temp);
  }
  for (VertexId v : current.verticesOf(VertexKind::RdmaDevice)) {
    for (const RdmaPort &port : current.vertex(v).as<RdmaInfo>()->ports) {
      std::string path = "/sys/class/infiniband/" + current.vertex(v).name + "/ports/" +
                         std::to_string(port.number) + "/state";
      std::optional<std::string> text = detail::readFileAt(root, path);
      // Ports that came from libibverbs alone have no sysfs file to re-read: kept as discovered.
      std::string state = text ? detail::rdmaPortState(*text) : port.state;
      changed |= state != port.state;
      facts.portStates.push_back(std::move(state));
    }
  }
  if (!changed)
    return LiveRefresh::Unchanged;

  updated = current;
  Topology &t = *updated;
  size_t pool = 0, sensor = 0, port = 0;
  for (unsigned node : t.numaNodes())
    if (NumaInfo *info = t.mutableVertex(t.numaVertex(node)).as<NumaInfo>())
      for (HugepagePool &p : info->hugepages)
        p = facts.pools[pool++];
  for (VertexId v : t.thermalSensors())
    t.mutableVertex(v).as<ThermalInfo>()->tempMilliC = facts.temperatures[sensor++];
  for (VertexId v : t.verticesOf(VertexKind::RdmaDevice))
    for (RdmaPort &p : t.mutableVertex(v).as<RdmaInfo>()->ports)
      p.state = facts.portStates[port++];
  t.reindex();
  return LiveRefresh::Changed;
}

} // namespace msc::hal
