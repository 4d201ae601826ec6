// The hardware topology of one node as a value: a Boost.Graph of typed vertices (machine, packages,
// NUMA nodes, caches, cores, PUs, the PCIe tree and the devices on it) plus indexes for the queries
// the validation passes ask. A Topology never touches the live machine; loaders (hal/Loader.h)
// produce it from hwloc, sysfs, XML or YAML.
#pragma once

#include "support/PciAddress.h"

#include <boost/graph/adjacency_list.hpp>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace msc::hal {

enum class VertexKind : uint8_t {
  Machine,
  Package,
  Group,    // hwloc groups, dies, SNC quadrants
  NumaNode,
  Cache,
  Core,
  Pu,       // a logical CPU
  HostBridge,
  PciBridge,
  PciDevice,
  Gpu,
  NvmeController,
  NvmeNamespace,
  NvmePartition,
  Nic,        // a network PCI function
  NetDevice,  // a kernel network interface (eth0, ib0)
  RdmaDevice, // an OpenFabrics device (mlx5_0) with ports
  BlockDevice,
  ThermalSensor,
};
llvm::StringRef kindName(VertexKind kind);

struct HugepagePool {
  uint64_t pageSize = 0; // bytes
  uint64_t total = 0;
  std::optional<uint64_t> free; // as the source gives it: unknown in hwloc XML
  bool operator==(const HugepagePool &) const = default;
  // The one reading of a pool for every tool (topology show, hardware health, the compiler's
  // warning): "3/16 free", or "?/16 free (the topology does not say how many)" where the source
  // records the pool but not its free pages (an hwloc XML): a recording's pool says little of what
  // will be free when a plan is applied, so nothing is inferred from it.
  std::string freeText() const;
};

struct NumaInfo {
  uint64_t memoryBytes = 0;
  std::vector<HugepagePool> hugepages; // sorted by page size
  std::vector<unsigned> cpus;          // os indexes of the local PUs (empty for GPU/HBM-only nodes)
  std::string subtype;                 // "GPUMemory", "HBM", ... when the source says
};

struct CacheInfo {
  unsigned level = 0;
  uint64_t sizeBytes = 0;
  char type = 'U'; // 'D'ata, 'I'nstruction, 'U'nified
};

struct PuInfo {
  bool online = true;
};

struct HostBridgeInfo {
  uint32_t domain = 0;
  uint8_t firstBus = 0, lastBus = 0;
};

enum class BridgeRole : uint8_t { RootPort, SwitchUpstream, SwitchDownstream, Other };

struct PciInfo {
  PciAddress address;
  uint16_t vendorId = 0, deviceId = 0;
  uint32_t classId = 0;       // 16-bit class/subclass as hwloc and lspci print it (0x0302)
  float linkGBps = 0;         // 0 when unknown
  BridgeRole role = BridgeRole::Other; // bridges only
  std::string vendorName, deviceName;  // when the source names them
};

enum class MigMode : uint8_t { Unknown, Disabled, Enabled };

struct GpuInfo {
  PciAddress pci;
  std::string vendor; // "NVIDIA", "AMD"
  std::string model;
  unsigned smCount = 0;       // 0 when unknown
  uint64_t memoryBytes = 0;   // 0 when unknown
  int ccMajor = -1, ccMinor = -1;
  MigMode mig = MigMode::Unknown;
  std::optional<bool> greenContexts;
  std::optional<int64_t> temperatureMilliC;
  std::vector<std::string> aliases; // "cuda0", "nvml0", "rsmi0"
};

struct NvmeControllerInfo {
  PciAddress pci;
  std::string model;
  std::optional<unsigned> queueCount; // I/O queues (controller's queue_count or mq dirs)
  std::optional<unsigned> queueDepth; // per-queue depth limit (sqsize+1 or nr_requests)
};

struct BlockInfo {
  uint64_t sizeBytes = 0;
  std::string subtype; // "Disk", "NVM" (pmem), ...
};

struct RdmaPort {
  unsigned number = 0;
  std::string state;     // "ACTIVE", "DOWN", ...
  std::string linkLayer; // "InfiniBand", "Ethernet"
  double rateGbps = 0;
  std::vector<std::pair<std::string, uint64_t>> errorCounters; // non-zero-able error counters
  bool operator==(const RdmaPort &) const = default;
};

struct RdmaInfo {
  std::vector<RdmaPort> ports;
  std::optional<uint32_t> maxQueuePairs; // ibv_query_device max_qp, when known
};

struct NetInfo {
  std::string address;
};

struct ThermalInfo {
  int64_t tempMilliC = 0;
  std::optional<int64_t> limitMilliC; // critical/max trip point
  std::string source;                 // "thermal_zone3", "hwmon1/temp2"
};

struct Vertex {
  VertexKind kind = VertexKind::Machine;
  std::string name;    // "mlx5_0", "nvme0n1", "eth0"; empty for anonymous CPU-side objects
  int64_t osIndex = -1;
  int numaNode = -1;   // locality: first local NUMA node (os index), -1 unknown/inherited
  std::variant<std::monostate, NumaInfo, CacheInfo, PuInfo, HostBridgeInfo, PciInfo, GpuInfo,
               NvmeControllerInfo, BlockInfo, RdmaInfo, NetInfo, ThermalInfo>
      data;

  template <typename T> const T *as() const { return std::get_if<T>(&data); }
  template <typename T> T *as() { return std::get_if<T>(&data); }
};

enum class EdgeKind : uint8_t { Contains, PcieLink, NvLink, NumaDistance };

struct Edge {
  EdgeKind kind = EdgeKind::Contains;
  unsigned count = 1;  // NVLink: number of links
  uint64_t value = 0;  // NUMA distance; NVLink bandwidth when known
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Vertex, Edge>;
using VertexId = Graph::vertex_descriptor;
inline constexpr VertexId NoVertex = static_cast<VertexId>(-1);

// The link between two devices in the terms of `nvidia-smi topo -m`.
struct LinkClass {
  enum Kind : uint8_t { Self, Pix, Pxb, Phb, Node, Sys, NvLink, Unknown } kind = Unknown;
  unsigned nvlinks = 0; // for NvLink
  std::string str() const; // "X", "PIX", ..., "NV12"
  static std::optional<LinkClass> parse(llvm::StringRef text);
  bool operator==(const LinkClass &) const = default;
};

struct GpuRef {
  unsigned index; // 0.. in PCI address order, as CUDA_DEVICE_ORDER=PCI_BUS_ID numbers them
  VertexId vertex;
  const GpuInfo *info;
};

class Topology {
public:
  Topology();
  Topology(const Topology &) = default;
  Topology &operator=(const Topology &) = default;
  // A moved-from Topology is empty, as a new one is.
  Topology(Topology &&other) noexcept;
  Topology &operator=(Topology &&other) noexcept;

  // --- building (loaders) ---------------------------------------------------------------------
  VertexId addVertex(Vertex v, VertexId parent = NoVertex, EdgeKind link = EdgeKind::Contains);
  void addEdge(VertexId a, VertexId b, Edge e);
  // A vertex to change: copies a shared shape first, so the reference is into this Topology's own
  // graph. Copying the Topology makes the copy share that graph again: change it through the
  // reference before copying, or ask again after.
  Vertex &mutableVertex(VertexId v) {
    fingerprint_.reset();
    return mutableShape().graph[v];
  }
  void setName(std::string name) {
    name_ = std::move(name);
    fingerprint_.reset();
  }
  // Sets the kernel command line and derives isolated / nohz_full CPUs from it.
  void setKernelCmdline(std::string cmdline);
  void setNumaDistances(std::vector<unsigned> nodeOrder, std::vector<uint64_t> matrix);
  // Builds every index; loaders call it last. Queries on an un-indexed topology assert.
  void reindex();

  // --- the graph ------------------------------------------------------------------------------
  const Graph &graph() const { return shape_->graph; }
  const Vertex &vertex(VertexId v) const { return shape_->graph[v]; }
  size_t vertexCount() const { return boost::num_vertices(shape_->graph); }
  VertexId root() const { return vertexCount() ? 0 : NoVertex; }
  VertexId parent(VertexId v) const { return shape_->parent[v]; }
  const std::vector<VertexId> &children(VertexId v) const { return shape_->children[v]; }
  size_t count(VertexKind kind) const { return shape_->byKind[static_cast<size_t>(kind)].size(); }
  const std::vector<VertexId> &verticesOf(VertexKind kind) const { return shape_->byKind[static_cast<size_t>(kind)]; }
  const std::string &name() const { return name_; }
  // What discovery could not see or use ("CUDA driver: not present"); not part of the fingerprint.
  const std::vector<std::string> &notes() const { return notes_; }
  void addNote(std::string note) { notes_.push_back(std::move(note)); }

  // --- CPUs -----------------------------------------------------------------------------------
  bool hasPu(unsigned os) const { return puVertex(os) != NoVertex; }
  bool isPuOnline(unsigned os) const;
  VertexId puVertex(unsigned os) const { return os < shape_->puByOs.size() ? shape_->puByOs[os] : NoVertex; }
  std::vector<unsigned> pus() const; // online and offline, ascending
  VertexId physicalCoreOf(unsigned pu) const;     // the Core vertex, NoVertex if none
  std::vector<unsigned> smtSiblings(unsigned pu) const; // PUs of the same core, itself included
  // The smallest PU of the core that holds `pu`: how a physical core is named in plans and claims.
  unsigned firstPuOfCore(unsigned pu) const;
  // Every physical core once, by its first PU (a PU outside any core stands for itself), ascending:
  // firstPuOfCore of every PU, indexed once, for callers that count cores on every node each round.
  const std::vector<unsigned> &firstPusOfCores() const { return shape_->coreFirstPus; }
  std::optional<unsigned> numaNodeOfPu(unsigned pu) const;
  std::vector<unsigned> cpusOfNumaNode(unsigned node) const;

  // --- memory ---------------------------------------------------------------------------------
  std::vector<unsigned> numaNodes() const; // os indexes, ascending
  VertexId numaVertex(unsigned os) const;
  const NumaInfo *numaInfo(unsigned os) const;
  std::optional<uint64_t> freeHugepages(unsigned node, uint64_t pageSize) const;
  const HugepagePool *hugepagePool(unsigned node, uint64_t pageSize) const; // nullptr: no such pool
  std::optional<uint64_t> numaDistance(unsigned a, unsigned b) const;
  // The distance matrix as set: row/column order by NUMA os index, then row-major values.
  const std::vector<unsigned> &numaDistanceOrder() const { return shape_->distOrder; }
  const std::vector<uint64_t> &numaDistanceMatrix() const { return shape_->distMatrix; }

  // --- devices --------------------------------------------------------------------------------
  // A device by PCI address ("0000:81:00.0", "81:00.0") or name ("mlx5_0", "nvme0n1", "cuda0", "eth0").
  VertexId findDevice(llvm::StringRef nameOrBdf) const;
  VertexId findPci(const PciAddress &addr) const;
  VertexId pciFunctionOf(VertexId device) const; // the PciDevice at or above, NoVertex if none
  std::optional<unsigned> numaNodeOfDevice(VertexId device) const;
  std::optional<unsigned> numaNodeOfDevice(llvm::StringRef device) const { return numaNodeOfDevice(findDevice(device)); }
  VertexId rootComplexOf(VertexId device) const; // the HostBridge
  VertexId pcieSwitchOf(VertexId device) const;  // the closest upstream switch (its upstream port)
  bool shareSwitch(VertexId a, VertexId b) const;
  bool shareRootComplex(VertexId a, VertexId b) const;
  LinkClass linkClass(VertexId a, VertexId b) const;
  LinkClass linkClass(llvm::StringRef a, llvm::StringRef b) const { return linkClass(findDevice(a), findDevice(b)); }
  unsigned nvlinkCount(VertexId a, VertexId b) const;

  std::vector<GpuRef> gpus() const; // by value: a Topology is copied and moved as a value
  std::optional<GpuRef> gpuByIndex(unsigned index) const;
  std::optional<GpuRef> gpuByPci(const PciAddress &addr) const;
  VertexId blockDevice(llvm::StringRef devName) const; // "nvme0n1", "nvme0n1p2", "/dev/nvme0n1"
  const RdmaInfo *rdmaDevice(llvm::StringRef name) const;
  std::vector<VertexId> thermalSensors() const { return verticesOf(VertexKind::ThermalSensor); }

  // --- kernel ---------------------------------------------------------------------------------
  const std::string &kernelCmdline() const { return shape_->cmdline; }
  const std::vector<unsigned> &isolatedCpus() const { return shape_->isolated; }
  const std::vector<unsigned> &nohzFullCpus() const { return shape_->nohzFull; }

  // --- identity -------------------------------------------------------------------------------
  // FNV-1a 64 of the canonical YAML export: equal for equal topologies, stable across runs.
  uint64_t fingerprint() const;
  // Bytes used by the graph and its indexes (approximate), for the benchmarks; copies that share a
  // shape each count all of it.
  size_t memoryFootprint() const;

  // Human-readable label of a vertex: "GPU 0000:81:00.0", "NUMANode P#1", "mlx5_0".
  std::string label(VertexId v) const;

private:
  // What copies of one node, and nodes of one machine shape, have in common: the graph, the kernel's
  // CPU sets, the NUMA distances and every index. Copies of a Topology share it and the first change
  // copies it (copy-on-write), so copying a Topology costs a reference count and a cluster of
  // identical nodes holds one graph per machine shape (readClusterYaml shares them).
  struct Shape {
    Graph graph;
    std::string cmdline;
    std::vector<unsigned> isolated, nohzFull;
    std::vector<unsigned> distOrder;
    std::vector<uint64_t> distMatrix;

    // indexes (reindex)
    std::vector<VertexId> parent;
    std::vector<std::vector<VertexId>> children;
    std::vector<std::vector<VertexId>> byKind;
    std::vector<VertexId> puByOs;
    std::vector<unsigned> coreFirstPus; // firstPusOfCores()
    llvm::DenseMap<unsigned, VertexId> numaByOs;
    llvm::DenseMap<uint64_t, VertexId> pciByAddr;
    llvm::StringMap<VertexId> byName;
    std::vector<VertexId> hostBridgeOf; // per vertex
    std::vector<VertexId> switchOf;     // per vertex: closest switch upstream port
    std::vector<int> numaOf;            // per vertex, inherited locality
    std::vector<VertexId> gpuOrder;
    llvm::DenseMap<uint64_t, unsigned> nvlinks; // (min,max) vertex pair -> link count
  };
  // The shape, made this Topology's own first when another shares it; every change goes through it.
  Shape &mutableShape();
  static std::shared_ptr<Shape> emptyShape();
  VertexId switchUnitOf(VertexId bridge) const;

  std::shared_ptr<Shape> shape_; // never null: an empty Topology shares one empty shape
  std::string name_;
  std::vector<std::string> notes_;
  mutable std::optional<uint64_t> fingerprint_; // cached; reset by reindex() and setters
};

// isolcpus= (with its optional flags, e.g. "managed_irq,domain,2-5") and nohz_full= of a command line.
struct KernelCpuSets {
  std::vector<unsigned> isolated, nohzFull;
};
KernelCpuSets parseKernelCmdline(llvm::StringRef cmdline);

uint64_t fnv1a64(llvm::StringRef bytes, uint64_t seed = 0xcbf29ce484222325ull);

} // namespace msc::hal
