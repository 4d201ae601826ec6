// Benchmarks of the checking pipeline (issue 4) and of lowering (issue 5). Each group has a
// baseline measured in the same run: parsing alone for the pipeline, an empty admission set for
// admission, encoding alone for lowering.
#include "compiler/Frontend.h"
#include "hal/Loader.h"
#include "hal/TopologyYaml.h"
#include "plan/PlanFile.h"
#include "passes/ContractClaims.h"
#include "passes/Lowering.h"
#include "passes/PassManager.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <benchmark/benchmark.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include <memory>

namespace {

const char *kFixture = MSC_SOURCE_DIR "/../shared/fixtures/topologies/hwloc-xml/mpibind-g4dnmetal-8xT4.xml";

// A typical contract for the 8x T4 g4dn.metal node: loader on GPU 0's NUMA node, two GPU roles,
// an NVMe reader. Named so that batches can hold many distinct contracts.
std::string contractText(unsigned i) {
  return "import \"profiles/mlvm.msc\";\n"
         "contract job_" + std::to_string(i) + " uses profile mlvm_heavy {\n"
         "  precision = [fp16];\n"
         "  io_topology {\n"
         "    image_loader { cpu_cores = [0, 1, 2, 3]; numa_node = 0; io_depth = 128; decoder = \"libjpeg-turbo\"; }\n"
         "    patch_embed  { gpu = 0; sm_slices = 2; gpu_memory = 8GiB; }\n"
         "    vision_tower { gpu = 1; sm_slices = 1; }\n"
         "    data         { io_queue = \"/dev/nvme0n1\"; io_depth = 64; cpu_cores = [4]; }\n"
         "  }\n"
         "}\n";
}

std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

const std::string &stdlibText() {
  static const std::string text = readFile(MSC_SOURCE_DIR "/stdlib/profiles/mlvm.msc");
  return text;
}

const msc::hal::Topology &node() {
  static const msc::hal::Topology topology = [] {
    msc::CollectingConsumer c;
    msc::DiagnosticEngine d(nullptr, c);
    auto t = msc::hal::loadTopology(msc::hal::TopologySource::file(kFixture), d);
    if (!t)
      abort();
    return std::move(*t);
  }();
  return topology;
}

// Parse + IR from memory (no disk in the loop).
std::optional<msc::ir::Module> frontend(const std::string &contract, llvm::SourceMgr &sm, msc::DiagnosticEngine &d) {
  msc::SourceSet sources;
  for (const std::string *text : {&contract, &stdlibText()}) {
    unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(*text, "in.msc"), llvm::SMLoc());
    auto file = msc::parseContract(id, sm, d);
    if (!file)
      return std::nullopt;
    sources.files.push_back(std::move(file));
  }
  return msc::buildModule(sources, d);
}

void BM_Baseline_ParseAndIr(benchmark::State &state) {
  std::string text = contractText(0);
  for (auto _ : state) {
    llvm::SourceMgr sm;
    msc::CollectingConsumer c;
    msc::DiagnosticEngine d(&sm, c);
    auto module = frontend(text, sm, d);
    benchmark::DoNotOptimize(module);
  }
}
BENCHMARK(BM_Baseline_ParseAndIr)->Unit(benchmark::kMicrosecond);

void BM_FullPipeline_8GpuNode(benchmark::State &state) {
  std::string text = contractText(0);
  const msc::hal::Topology &topo = node();
  msc::admission::Held none;
  msc::passes::PassManager pm = msc::passes::PassManager::defaultPipeline();
  for (auto _ : state) {
    llvm::SourceMgr sm;
    msc::CollectingConsumer c;
    msc::DiagnosticEngine d(&sm, c);
    auto module = frontend(text, sm, d);
    if (!module || module->contracts.empty()) {
      state.SkipWithError("contract did not compile");
      return;
    }
    const msc::ir::Contract &contract = module->contracts.front();
    benchmark::DoNotOptimize(pm.check(contract, &topo, none, d).accepted);
  }
}
BENCHMARK(BM_FullPipeline_8GpuNode)->Unit(benchmark::kMicrosecond);

// Admission of one contract against N admitted contracts, each holding a core, a GPU share and
// hugepages on the node.
void BM_Admission(benchmark::State &state) {
  const msc::hal::Topology &topo = node();
  llvm::SourceMgr sm;
  msc::CollectingConsumer c;
  msc::DiagnosticEngine d(&sm, c);
  std::string text = contractText(0);
  auto module = frontend(text, sm, d);
  const msc::ir::Contract &contract = module->contracts.front();
  msc::passes::Placement placement = msc::passes::place(contract, &topo);
  msc::admission::Claims claims = msc::passes::claimsOf(contract, placement, &topo);
  msc::admission::Held admitted;
  for (int64_t i = 0; i < state.range(0); ++i) {
    msc::admission::Claims h;
    h.contract = "admitted_" + std::to_string(i);
    msc::admission::RoleClaims &role = h.roles.emplace_back();
    role.physicalCores.push_back(static_cast<unsigned>(8 + i % 40));
    role.gpu = msc::admission::GpuClaim{};
    role.gpu->pci = topo.gpus()[static_cast<size_t>(i) % topo.gpus().size()].info->pci;
    role.hugepages = msc::admission::HugepageClaim{};
    role.hugepages->numaNode = 0;
    role.hugepages->pageSize = 2u << 20;
    role.hugepages->pages = 1;
    admitted.contracts.push_back(std::move(h));
  }
  for (auto _ : state) {
    msc::CollectingConsumer sink;
    msc::DiagnosticEngine quiet(&sm, sink);
    msc::admission::checkAgainstHeld(claims, admitted, {topo, quiet, msc::Location::none()});
    benchmark::DoNotOptimize(sink.diags.size());
  }
}
BENCHMARK(BM_Admission)->Arg(0)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_Baseline_EncodePlan(benchmark::State &state) {
  llvm::SourceMgr sm;
  msc::CollectingConsumer c;
  msc::DiagnosticEngine d(&sm, c);
  std::string text = contractText(0);
  auto module = frontend(text, sm, d);
  const msc::ir::Contract &contract = module->contracts.front();
  msc::passes::Placement placement = msc::passes::place(contract, &node());
  msc::plan::Plan plan = msc::passes::lowerToPlan(contract, placement, {}, node(), "bench");
  for (auto _ : state)
    benchmark::DoNotOptimize(msc::plan::encodePlan(plan));
}
BENCHMARK(BM_Baseline_EncodePlan)->Unit(benchmark::kMicrosecond);

void BM_LowerAndEncode(benchmark::State &state) {
  llvm::SourceMgr sm;
  msc::CollectingConsumer c;
  msc::DiagnosticEngine d(&sm, c);
  std::string text = contractText(0);
  auto module = frontend(text, sm, d);
  const msc::ir::Contract &contract = module->contracts.front();
  msc::passes::Placement placement = msc::passes::place(contract, &node());
  for (auto _ : state) {
    msc::plan::Plan plan = msc::passes::lowerToPlan(contract, placement, {}, node(), "bench");
    benchmark::DoNotOptimize(msc::plan::encodePlan(plan));
  }
}
BENCHMARK(BM_LowerAndEncode)->Unit(benchmark::kMicrosecond);

// 1,000 distinct contracts, each compiled (parse, IR, passes, lowering, encoding) against its own
// node of a 1,000-node cluster description read from YAML once.
void BM_Batch1000ContractsOn1000Nodes(benchmark::State &state) {
  msc::hal::Cluster cluster;
  cluster.name = "bench";
  for (unsigned i = 0; i < 1000; ++i) {
    msc::hal::Topology t = node();
    t.setName("node" + std::to_string(i));
    cluster.nodes.push_back(std::move(t));
  }
  std::string yaml = msc::hal::writeClusterYaml(cluster);
  msc::CollectingConsumer c;
  msc::DiagnosticEngine d(nullptr, c);
  std::optional<msc::hal::Cluster> loaded = msc::hal::readClusterYaml(yaml, "cluster.yaml", d);
  if (!loaded || loaded->nodes.size() != 1000) {
    state.SkipWithError("cluster did not load");
    return;
  }
  std::vector<std::string> texts;
  for (unsigned i = 0; i < 1000; ++i)
    texts.push_back(contractText(i));
  msc::admission::Held none;
  msc::passes::PassManager pm = msc::passes::PassManager::defaultPipeline();
  for (auto _ : state) {
    size_t bytes = 0;
    for (unsigned i = 0; i < 1000; ++i) {
      llvm::SourceMgr sm;
      msc::CollectingConsumer sink;
      msc::DiagnosticEngine quiet(&sm, sink);
      auto module = frontend(texts[i], sm, quiet);
      const msc::ir::Contract &contract = module->contracts.front();
      const msc::hal::Topology &topo = loaded->nodes[i];
      msc::passes::CheckedContract checked = pm.check(contract, &topo, none, quiet);
      bytes += msc::plan::encodePlan(
                   msc::passes::lowerToPlan(contract, checked.placement, checked.decisions, topo, "bench"))
                   .size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["contracts/s"] = benchmark::Counter(1000.0 * static_cast<double>(state.iterations()),
                                                     benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Batch1000ContractsOn1000Nodes)->Unit(benchmark::kMillisecond)->Iterations(3);

} // namespace

BENCHMARK_MAIN();
