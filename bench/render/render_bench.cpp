// What drawing a flame graph costs for a trace-sized input: 10,000 distinct stacks of depth 24 (a
// long training run's CUDA call sites under many data-loader and model paths), 5% of them implicit
// syncs. Each step is measured alone; the baseline is copying the folded text once (the floor of any
// reader). Results in docs/PERFORMANCE.md.
#include "render/FlameGraphSvg.h"
#include "render/FoldedStacks.h"
#include "render/FrameTree.h"
#include "render/Speedscope.h"

#include <benchmark/benchmark.h>

#include <random>

using namespace msc::render;

namespace {

const std::string &foldedText() {
  static const std::string text = [] {
    std::mt19937_64 rng(17);
    const char *calls[] = {"cuLaunchKernel", "cuMemcpyHtoDAsync_v2", "cuStreamSynchronize", "cuMemAlloc_v2"};
    std::string out;
    for (int s = 0; s < 10000; ++s) {
      std::string line = "python3";
      // Shared outer frames, then branches that fan out with depth (as real call trees do).
      for (int d = 0; d < 23; ++d)
        line += ";module" + std::to_string(d) + "::fn" + std::to_string(rng() % (d < 4 ? 2 : 6));
      line += std::string(";") + calls[rng() % 4];
      if (rng() % 20 == 0)
        line += "_[implicit-sync]";
      out += line + " " + std::to_string(1 + rng() % 1000) + "\n";
    }
    return out;
  }();
  return text;
}

const std::set<std::string, std::less<>> kSync = {"cuStreamSynchronize", "cuCtxSynchronize"};

FoldedProfile profile() {
  FoldedParseError e;
  return *parseFolded(foldedText(), e);
}

void BM_Baseline_CopyText(benchmark::State &state) {
  for (auto _ : state) {
    std::string copy = foldedText();
    benchmark::DoNotOptimize(copy.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(foldedText().size()));
}
BENCHMARK(BM_Baseline_CopyText)->Unit(benchmark::kMillisecond);

void BM_ParseFolded(benchmark::State &state) {
  for (auto _ : state) {
    FoldedParseError e;
    auto p = parseFolded(foldedText(), e);
    benchmark::DoNotOptimize(p);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(foldedText().size()));
}
BENCHMARK(BM_ParseFolded)->Unit(benchmark::kMillisecond);

void BM_BuildFrameTree(benchmark::State &state) {
  FoldedProfile p = profile();
  for (auto _ : state) {
    FrameTree t = buildFrameTree(p, kSync);
    benchmark::DoNotOptimize(t.frames);
  }
}
BENCHMARK(BM_BuildFrameTree)->Unit(benchmark::kMillisecond);

void BM_WriteSvg(benchmark::State &state) {
  FrameTree t = buildFrameTree(profile(), kSync);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    llvm::raw_string_ostream os(out);
    writeFlameGraphSvg(t, FlameGraphOptions{}, os);
    bytes = os.str().size();
  }
  state.counters["frames"] = double(t.frames);
  state.counters["svg_MiB"] = double(bytes) / (1 << 20);
}
BENCHMARK(BM_WriteSvg)->Unit(benchmark::kMillisecond);

void BM_WriteSpeedscope(benchmark::State &state) {
  FoldedProfile p = profile();
  for (auto _ : state) {
    std::string out;
    llvm::raw_string_ostream os(out);
    writeSpeedscope(p, SpeedscopeOptions{}, os);
    benchmark::DoNotOptimize(os.str().data());
  }
}
BENCHMARK(BM_WriteSpeedscope)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
