// Placement decision latency and throughput with 1,000 registered nodes (issue 14's aims: P99 <=
// 1 ms, >= 5,000 placements/s on one controller), over varied recorded topologies loaded once.
// Baselines in the same run: the frontend alone (what placement runs once, not per node) and one
// node's check and lowering (the unit of work the prefilter saves on the other nodes).
#include "cluster/placement/Placer.h"
#include "driver/Compile.h"
#include "hal/Loader.h"
#include "passes/Lowering.h"
#include "passes/PassManager.h"
#include "support/Version.h"

#include <benchmark/benchmark.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

constexpr unsigned kNodes = 1000;

std::string fixture(const char *name) {
  return std::string(MSC_SOURCE_DIR) + "/../shared/fixtures/topologies/hwloc-xml/" + name;
}

// Recorded machines with and without GPUs and HCAs, so that the prefilter and the check both see
// nodes that fit and nodes that do not.
const char *kMachines[] = {
    "psmgmt-jwb0004-juwelsbooster-4xA100.xml",   "psmgmt-jrc0323-jurecadc-gpu-4xA100.xml",
    "psmgmt-jrc0386-jurecadc-gpu-4xA100.v1-format.xml", "mpibind-g4dnmetal-8xT4.xml",
    "mpibind-coral-lassen-power9-4xV100.xml",     "hwloc-nvidiaDGX2.xml",
    "hwloc-24em64t-2n6c2t-pci.xml",               "psmgmt-dp-intelmax01-flat-xeonmax-hbm.xml",
};

std::string writeContract(const std::string &name, const std::string &text) {
  static llvm::SmallString<128> dir;
  if (dir.empty() && llvm::sys::fs::createUniqueDirectory("msc-placement-bench", dir))
    abort();
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, name + ".msc");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    abort();
  os << text;
  return path.str().str();
}

// A job of `nodes` nodes, four roles each: a GPU, the HCA nearest to it, and cores by the first GPU.
std::string jobText(const std::string &name, unsigned nodes, bool ioHeavy) {
  return "import \"profiles/mlvm.msc\";\n"
         "contract " + name + " uses profile mlvm_light {\n"
         "  nodes = " + std::to_string(nodes) + ";\n"
         "  io_topology {\n"
         "    r0 { gpu = any; rdma_port = nearest; cpu_cores = 4 local; }\n"
         "    r1 { gpu = any; rdma_port = nearest; }\n"
         "    r2 { gpu = any; rdma_port = nearest; }\n"
         "    r3 { gpu = any; rdma_port = nearest; }\n"
         "  }\n" +
         (ioHeavy ? "  policy { cross_domain_io = false; }\n" : "") + "}\n";
}

struct Setup {
  llvm::SourceMgr sm;
  msc::CollectingConsumer consumer;
  msc::DiagnosticEngine diags{&sm, consumer};
  std::vector<std::shared_ptr<const msc::hal::Topology>> machines;
  msc::cluster::NodeRegistry registry;
  std::optional<msc::ir::Module> job4, job1, holder, nofit;

  std::optional<msc::ir::Module> load(const std::string &name, const std::string &text) {
    msc::driver::CompileOptions options;
    options.inputs = {writeContract(name, text)};
    options.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
    auto module = msc::driver::loadContracts(options, sm, diags);
    if (!module)
      abort();
    return module;
  }

  Setup() {
    for (const char *m : kMachines) {
      auto t = msc::hal::loadTopology(msc::hal::TopologySource::file(fixture(m)), diags);
      if (!t)
        abort();
      machines.push_back(std::make_shared<const msc::hal::Topology>(std::move(*t)));
    }
    job4 = load("job4", jobText("job4", 4, true));
    job1 = load("job1", jobText("job1", 1, false));
    // Passes the prefilter wherever four GPUs are free, fails every node's check (no such HCA): the
    // error path, with the closest node and the notes built.
    std::string nofitText = jobText("nofit", 4, true);
    for (size_t at; (at = nofitText.find("rdma_port = nearest")) != std::string::npos;)
      nofitText.replace(at, 19, "rdma_port = \"mlx5_9\"");
    nofit = load("nofit", nofitText);
    holder = load("holder", "import \"profiles/mlvm.msc\";\n"
                            "contract holder uses profile mlvm_light { io_topology { t { gpu = 0; } } }\n");
    char name[32];
    for (unsigned i = 0; i < kNodes; ++i) {
      std::snprintf(name, sizeof name, "node%04u", i);
      registry.add(name, machines[i % machines.size()], diags);
    }
    // Every third GPU node already holds GPU 0 (a plan admitted there): such nodes fail the
    // four-GPU prefilter and are the best fit for a smaller job.
    msc::passes::PassManager pm = msc::passes::PassManager::defaultPipeline();
    for (unsigned i = 0; i < kNodes; i += 3) {
      const msc::cluster::NodeState *node = registry.nodes()[i];
      if (node->topology->gpus().empty())
        continue;
      msc::CollectingConsumer c;
      msc::DiagnosticEngine d(&sm, c);
      auto checked = pm.check(holder->contracts.front(), node->topology.get(), node->held, d);
      if (!checked.accepted || d.hasErrors())
        continue;
      registry.admit(node->name,
                     msc::passes::lowerToPlan(holder->contracts.front(), checked.placement, checked.decisions,
                                              *node->topology, msc::kVersion),
                     "bench", diags);
    }
  }
};

Setup &setup() {
  static Setup s;
  return s;
}

// Placement decisions, timed one by one for the percentiles; placements/s from the total.
void placeLoop(benchmark::State &state, const msc::ir::Contract &contract) {
  Setup &s = setup();
  msc::cluster::Placer placer(s.registry, msc::kVersion);
  std::vector<double> us;
  unsigned checked = 0, placed = 0;
  for (auto _ : state) {
    msc::CollectingConsumer c;
    msc::DiagnosticEngine d(&s.sm, c);
    auto start = std::chrono::steady_clock::now();
    msc::cluster::PlacementResult r = placer.place(contract, d);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    benchmark::DoNotOptimize(r);
    checked += r.checked;
    placed += r.placed();
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us.empty() ? 0.0 : us[std::min(us.size() - 1, size_t(p * us.size()))]; };
  state.counters["p50_us"] = pct(0.50);
  state.counters["p99_us"] = pct(0.99);
  state.counters["max_us"] = us.empty() ? 0.0 : us.back();
  state.counters["nodes_checked"] = us.empty() ? 0.0 : double(checked) / us.size();
  state.counters["placed"] = us.empty() ? 0.0 : double(placed) / us.size();
  state.counters["placements_per_s"] = benchmark::Counter(double(us.size()), benchmark::Counter::kIsRate);
}

// A 4-node IO-heavy job (four GPUs with their PIX HCAs per node) among 1,000 nodes.
void BM_Place_4Nodes_1000(benchmark::State &state) { placeLoop(state, setup().job4->contracts.front()); }
BENCHMARK(BM_Place_4Nodes_1000)->Unit(benchmark::kMicrosecond);

// A 1-node compute-heavy job: best fit takes a node that already holds a GPU.
void BM_Place_1Node_1000(benchmark::State &state) { placeLoop(state, setup().job1->contracts.front()); }
BENCHMARK(BM_Place_1Node_1000)->Unit(benchmark::kMicrosecond);

// A 4-node job no node can honour: every class of nodes checked, ERR_PLACE_001 with its notes.
void BM_Place_NoFit_1000(benchmark::State &state) { placeLoop(state, setup().nofit->contracts.front()); }
BENCHMARK(BM_Place_NoFit_1000)->Unit(benchmark::kMicrosecond);

// Baseline: one node's check and lowering of the same 4-node job (what mscalec runs after its
// frontend), on a JUWELS Booster node.
void BM_Baseline_OneNodeCheckAndLower(benchmark::State &state) {
  Setup &s = setup();
  msc::passes::PassManager pm = msc::passes::PassManager::defaultPipeline();
  const msc::cluster::NodeState *node = s.registry.nodes()[1];
  for (auto _ : state) {
    msc::CollectingConsumer c;
    msc::DiagnosticEngine d(&s.sm, c);
    auto checked = pm.check(s.job4->contracts.front(), node->topology.get(), node->held, d);
    benchmark::DoNotOptimize(msc::passes::lowerToPlan(s.job4->contracts.front(), checked.placement,
                                                      checked.decisions, *node->topology, msc::kVersion));
  }
}
BENCHMARK(BM_Baseline_OneNodeCheckAndLower)->Unit(benchmark::kMicrosecond);

// Baseline: the frontend alone on the same contract (placement runs it once per contract).
void BM_Baseline_Frontend(benchmark::State &state) {
  Setup &s = setup();
  for (auto _ : state)
    benchmark::DoNotOptimize(s.load("job4", jobText("job4", 4, true)));
}
BENCHMARK(BM_Baseline_Frontend)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
