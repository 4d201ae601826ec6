// Parse + IR build (the whole frontend short of reading files) on memory buffers:
//   (a) one typical contract, examples/contracts/qwen-vl-chat.msc, with the stdlib it imports;
//   (b) one generated file of 10,000 contracts on a three-level profile chain.
// Items are contracts, so Google Benchmark's items_per_second is contracts/s. Run with
//   build/bench/frontend_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
// for medians; docs/PERFORMANCE.md records the numbers.
#include "compiler/Frontend.h"

#include <benchmark/benchmark.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include <cstdlib>
#include <string>

namespace {

std::string readOrDie(const char *path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    fprintf(stderr, "frontend_bench: cannot read %s\n", path);
    std::exit(2);
  }
  return (*buffer)->getBuffer().str();
}

// Parses the buffers (main file first) and builds the module, as mscalec does after reading.
size_t compile(const std::vector<std::pair<const char *, const std::string *>> &files) {
  llvm::SourceMgr sm;
  msc::CollectingConsumer consumer;
  msc::DiagnosticEngine diags(&sm, consumer);
  msc::SourceSet sources;
  for (const auto &[name, text] : files) {
    unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(*text, name), llvm::SMLoc());
    sources.files.push_back(msc::parseContract(id, sm, diags));
  }
  std::optional<msc::ir::Module> module = msc::buildModule(sources, diags);
  if (!module || diags.hasErrors()) {
    fprintf(stderr, "frontend_bench: the input does not compile: %s\n",
            consumer.diags.empty() ? "?" : consumer.diags[0].message.c_str());
    std::exit(1);
  }
  return module->contracts.size();
}

void BM_TypicalContract(benchmark::State &state) {
  static const std::string contract = readOrDie(MSC_SOURCE_DIR "/examples/contracts/qwen-vl-chat.msc");
  static const std::string stdlib = readOrDie(MSC_SOURCE_DIR "/stdlib/profiles/mlvm.msc");
  size_t contracts = 0;
  for (auto _ : state)
    contracts += compile({{"qwen-vl-chat.msc", &contract}, {"profiles/mlvm.msc", &stdlib}});
  state.SetItemsProcessed(static_cast<int64_t>(contracts));
}
BENCHMARK(BM_TypicalContract)->Unit(benchmark::kMicrosecond);

// The same two buffers through parseContract only (lexer, parser, AST), to split (a) into parsing
// and IR building.
void BM_TypicalContractParseOnly(benchmark::State &state) {
  static const std::string contract = readOrDie(MSC_SOURCE_DIR "/examples/contracts/qwen-vl-chat.msc");
  static const std::string stdlib = readOrDie(MSC_SOURCE_DIR "/stdlib/profiles/mlvm.msc");
  for (auto _ : state) {
    llvm::SourceMgr sm;
    msc::CollectingConsumer consumer;
    msc::DiagnosticEngine diags(&sm, consumer);
    for (const std::string *text : {&contract, &stdlib}) {
      unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(*text, "in.msc"), llvm::SMLoc());
      benchmark::DoNotOptimize(msc::parseContract(id, sm, diags));
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TypicalContractParseOnly)->Unit(benchmark::kMicrosecond);

std::string generateContracts(unsigned count) {
  std::string out = "profile gen_base { cpu_cores = 2; rdma_qps = 1; fault_tolerance { heartbeat = 200ms; } "
                    "scaling { window = 10s; throttle_at = 75C; } }\n"
                    "profile gen_mid extends gen_base { gpu_sm_slices = 2; }\n"
                    "profile gen_top extends gen_mid { cpu_cores = 4; }\n";
  for (unsigned i = 0; i < count; ++i) {
    std::string n = std::to_string(i);
    out += "contract job_" + n + " uses profile gen_top {\n"
           "  io_topology {\n"
           "    image_loader { cpu_cores = [" + std::to_string(i % 64) + ".." + std::to_string(i % 64 + 3) +
           "]; numa_node = " + std::to_string(i % 2) + "; io_depth = 128; decoder = \"libjpeg-turbo\"; }\n"
           "    patch_embed  { gpu = " + std::to_string(i % 8) + "; pcie_domain = \"0000:81\"; gds = true; }\n"
           "    rdma_cache   { rdma_port = \"mlx5_0:1\"; memory_pool = hugepages(2MiB, count = 2048); }\n"
           "  }\n"
           "  fault_tolerance { recovery_point = every(128 steps); stateful_io = true; }\n"
           "  scaling { density_deviation = 15%; scale_up_below = 70C; window = 10s; }\n"
           "}\n";
  }
  return out;
}

void BM_TenThousandContracts(benchmark::State &state) {
  static const std::string file = generateContracts(10000);
  size_t contracts = 0;
  for (auto _ : state)
    contracts += compile({{"generated.msc", &file}});
  state.SetItemsProcessed(static_cast<int64_t>(contracts));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * file.size()));
  state.counters["contracts"] = 10000;
}
BENCHMARK(BM_TenThousandContracts)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
