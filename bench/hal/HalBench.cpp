// HAL benchmarks: loading and building the graph (largest fixture, live machine, YAML), query
// rates, and a synthetic 1,000-node cluster description. Each group has a baseline measured in
// the same run: hwloc's own XML import, and LLVM's YAML parser alone.
#include "hal/Loader.h"
#include "hal/TopologyYaml.h"
#include "hal/detail/ClusterYamlReading.h"

#include <benchmark/benchmark.h>
#include <hwloc.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/YAMLParser.h>

#include <set>
#include <string>

using namespace msc;
using namespace msc::hal;

namespace {

std::string fixture(const std::string &rel) {
  return std::string(MSC_SOURCE_DIR) + "/../shared/fixtures/topologies/" + rel;
}
const std::string kLargest = "hwloc-xml/hwloc-192em64t-24n8c2t.xml";
const std::string kJureca = "hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml";

std::string readAll(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

Topology mustLoad(const std::string &rel) {
  CollectingConsumer c;
  DiagnosticEngine d(nullptr, c);
  auto t = loadTopology(TopologySource::file(fixture(rel)), d);
  if (!t)
    std::abort();
  return std::move(*t);
}

// --- load + build ------------------------------------------------------------------------------

void BM_Baseline_HwlocXmlImport_24Numa(benchmark::State &state) {
  std::string xml = readAll(fixture(kLargest));
  for (auto _ : state) {
    hwloc_topology_t t;
    hwloc_topology_init(&t);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_xmlbuffer(t, xml.c_str(), int(xml.size() + 1));
    hwloc_topology_load(t);
    benchmark::DoNotOptimize(hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU));
    hwloc_topology_destroy(t);
  }
}
BENCHMARK(BM_Baseline_HwlocXmlImport_24Numa)->Unit(benchmark::kMillisecond);

void BM_LoadXmlAndBuildGraph_24Numa(benchmark::State &state) {
  std::string xml = readAll(fixture(kLargest));
  size_t bytes = 0;
  for (auto _ : state) {
    CollectingConsumer c;
    DiagnosticEngine d(nullptr, c);
    auto t = loadHwlocXmlBuffer(xml, "x.xml", d);
    bytes = t->memoryFootprint();
    benchmark::DoNotOptimize(t->vertexCount());
  }
  state.counters["graph_bytes"] = double(bytes);
}
BENCHMARK(BM_LoadXmlAndBuildGraph_24Numa)->Unit(benchmark::kMillisecond);

void BM_LoadYaml_24Numa(benchmark::State &state) {
  std::string yaml = writeTopologyYaml(mustLoad(kLargest));
  for (auto _ : state) {
    CollectingConsumer c;
    DiagnosticEngine d(nullptr, c);
    auto t = readTopologyYaml(yaml, "x.yaml", d);
    benchmark::DoNotOptimize(t->vertexCount());
  }
  state.counters["yaml_bytes"] = double(yaml.size());
}
BENCHMARK(BM_LoadYaml_24Numa)->Unit(benchmark::kMillisecond);

void BM_DiscoverLiveMachine(benchmark::State &state) {
  LiveOptions opts;
  for (auto _ : state) {
    CollectingConsumer c;
    DiagnosticEngine d(nullptr, c);
    auto t = discoverLive(opts, d);
    benchmark::DoNotOptimize(t->vertexCount());
  }
}
BENCHMARK(BM_DiscoverLiveMachine)->Unit(benchmark::kMillisecond);

// --- queries -----------------------------------------------------------------------------------

void BM_Query_NumaNodeOfPu(benchmark::State &state) {
  Topology t = mustLoad(kLargest);
  unsigned pu = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.numaNodeOfPu(pu));
    pu = (pu + 7) % 384;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_NumaNodeOfPu);

void BM_Query_SmtSiblings(benchmark::State &state) {
  Topology t = mustLoad(kLargest);
  unsigned pu = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.smtSiblings(pu));
    pu = (pu + 7) % 384;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_SmtSiblings);

void BM_Query_CpusOfNumaNode(benchmark::State &state) {
  Topology t = mustLoad(kLargest);
  unsigned n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.cpusOfNumaNode(n));
    n = (n + 1) % 24;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_CpusOfNumaNode);

void BM_Query_FindDeviceByName(benchmark::State &state) {
  Topology t = mustLoad(kJureca);
  const char *names[] = {"mlx5_0", "mlx5_1", "ib2", "mlx5_3"};
  unsigned i = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(t.findDevice(names[i++ & 3]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_FindDeviceByName);

void BM_Query_FindDeviceByBdf(benchmark::State &state) {
  Topology t = mustLoad(kJureca);
  const char *names[] = {"0000:03:00.0", "0000:44:00.0", "0000:84:00.0", "0000:c4:00.0"};
  unsigned i = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(t.findDevice(names[i++ & 3]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_FindDeviceByBdf);

void BM_Query_NumaNodeOfDevice(benchmark::State &state) {
  Topology t = mustLoad(kJureca);
  VertexId v = t.findDevice("mlx5_2");
  for (auto _ : state)
    benchmark::DoNotOptimize(t.numaNodeOfDevice(v));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_NumaNodeOfDevice);

void BM_Query_ShareSwitch(benchmark::State &state) {
  Topology t = mustLoad(kJureca);
  VertexId a = t.findDevice("0000:44:00.0"), b = t.findDevice("mlx5_1");
  for (auto _ : state)
    benchmark::DoNotOptimize(t.shareSwitch(a, b));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_ShareSwitch);

void BM_Query_LinkClassAllPairs8x8(benchmark::State &state) {
  Topology t = mustLoad(kJureca);
  std::vector<VertexId> devs;
  for (const GpuRef &g : t.gpus())
    devs.push_back(g.vertex);
  for (VertexId v : t.verticesOf(VertexKind::RdmaDevice))
    devs.push_back(v);
  for (auto _ : state)
    for (VertexId a : devs)
      for (VertexId b : devs)
        benchmark::DoNotOptimize(t.linkClass(a, b));
  state.SetItemsProcessed(state.iterations() * devs.size() * devs.size());
}
BENCHMARK(BM_Query_LinkClassAllPairs8x8);

void BM_Query_FreeHugepages(benchmark::State &state) {
  Topology t = mustLoad(kLargest);
  unsigned n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.freeHugepages(n, 2u << 20));
    n = (n + 1) % 24;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Query_FreeHugepages);

void BM_Fingerprint_24Numa(benchmark::State &state) {
  Topology t = mustLoad(kLargest);
  for (auto _ : state)
    benchmark::DoNotOptimize(t.fingerprint());
}
BENCHMARK(BM_Fingerprint_24Numa)->Unit(benchmark::kMicrosecond);

// --- synthetic 1,000-node cluster: 8 GPUs and 8 NICs (one per switch), 2 NUMA nodes each ----------
// Nodes of one machine shape differ only in name; with `everyNodeDiffers` each node also has its own
// count of free hugepages, as a description exported from live nodes would (the reader's worst case:
// no two nodes share a graph).

std::string syntheticCluster(unsigned nodes, bool everyNodeDiffers = false) {
  std::string out = "cluster: synthetic\nnodes:\n";
  for (unsigned n = 0; n < nodes; ++n) {
    out += "  - name: node" + std::to_string(n) + "\n";
    out += "    packages:\n      - id: 0\n        cpus: \"0-63\"\n      - id: 1\n        cpus: \"64-127\"\n";
    out += "    numa_nodes:\n";
    for (unsigned m = 0; m < 2; ++m)
      out += "      - id: " + std::to_string(m) + "\n        memory_bytes: 549755813888\n        cpus: \"" +
             std::to_string(m * 64) + "-" + std::to_string(m * 64 + 63) + "\"\n        distances: [ " +
             (m ? "21, 10" : "10, 21") + " ]\n        hugepages:\n          - { page_size: 1073741824, total: 1024, free: " +
             std::to_string(everyNodeDiffers ? n : 60) + " }\n";
    out += "    topology:\n      pcie_domains:\n";
    char bus[8];
    for (unsigned g = 0; g < 8; ++g) {
      unsigned base = 0x10 + g * 0x10;
      auto bdf = [&](unsigned b) {
        snprintf(bus, sizeof bus, "%02x", b);
        return std::string("\"0000:") + bus + ":00.0\"";
      };
      snprintf(bus, sizeof bus, "%02x", base);
      out += std::string("        - domain: \"0000:") + bus + "\"\n          numa_node: " + std::to_string(g / 4) +
             "\n          switches:\n            - switch: " + bdf(base + 1) + "\n              gpus: [ " +
             bdf(base + 2) + " ]\n              nics: [ " + bdf(base + 3) + " ]\n";
    }
    out += "    gpus:\n";
    for (unsigned g = 0; g < 8; ++g) {
      snprintf(bus, sizeof bus, "%02x", 0x12 + g * 0x10);
      out += std::string("      - { pci: \"0000:") + bus + ":00.0\", model: H100, sm_count: 132, memory_bytes: 85899345920 }\n";
    }
    out += "    nics:\n";
    for (unsigned g = 0; g < 8; ++g) {
      snprintf(bus, sizeof bus, "%02x", 0x13 + g * 0x10);
      out += std::string("      - pci: \"0000:") + bus + ":00.0\"\n        rdma: mlx5_" + std::to_string(g) +
             "\n        ports: [ { port: 1, state: ACTIVE, link_layer: InfiniBand, rate_gbps: 400 } ]\n";
    }
  }
  return out;
}

// Arg 1: the cluster whose every node differs (below).
void BM_Baseline_YamlParseOnly_Cluster1000(benchmark::State &state) {
  std::string text = syntheticCluster(1000, state.range(0) != 0);
  for (auto _ : state) {
    llvm::SourceMgr sm;
    llvm::yaml::Stream stream(text, sm);
    for (auto &doc : stream)
      doc.skip();
  }
  state.counters["yaml_bytes"] = double(text.size());
}
BENCHMARK(BM_Baseline_YamlParseOnly_Cluster1000)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void loadCluster1000(benchmark::State &state, bool everyNodeDiffers) {
  std::string text = syntheticCluster(1000, everyNodeDiffers);
  std::optional<Cluster> cluster;
  for (auto _ : state) {
    CollectingConsumer c;
    DiagnosticEngine d(nullptr, c);
    cluster = readClusterYaml(text, "cluster.yaml", d);
    if (!cluster)
      std::abort();
  }
  size_t bytes = 0, nodes = cluster->nodes.size();
  std::set<const Graph *> distinct; // nodes of one shape share a graph
  for (const Topology &t : cluster->nodes)
    if (distinct.insert(&t.graph()).second)
      bytes += t.memoryFootprint();
  size_t graphs = distinct.size();
  state.counters["nodes"] = double(nodes);
  state.counters["graphs"] = double(graphs);
  state.counters["graph_bytes_total"] = double(bytes);
  state.counters["yaml_bytes"] = double(text.size());
}
void BM_LoadCluster1000(benchmark::State &state) { loadCluster1000(state, false); }
BENCHMARK(BM_LoadCluster1000)->Unit(benchmark::kMillisecond);
void BM_LoadCluster1000_EveryNodeDiffers(benchmark::State &state) { loadCluster1000(state, true); }
BENCHMARK(BM_LoadCluster1000_EveryNodeDiffers)->Unit(benchmark::kMillisecond);

// The reading before the node-by-node cut: the whole document through one YAML I/O pass.
void BM_LoadCluster1000_WholeDocument(benchmark::State &state) {
  std::string text = syntheticCluster(1000, state.range(0) != 0);
  for (auto _ : state) {
    CollectingConsumer c;
    DiagnosticEngine d(nullptr, c);
    if (!msc::hal::detail::readClusterWhole(text, "cluster.yaml", d))
      std::abort();
  }
}
BENCHMARK(BM_LoadCluster1000_WholeDocument)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
