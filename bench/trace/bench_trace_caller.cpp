// bench_trace_caller: the program bench_trace measures. It dlopens a libcuda (as the frameworks do),
// calls cuMemFree_v2 in a tight loop and writes the median ns per call of its runs to a file. Run
// untraced, under uprobes and with the interposer preloaded, it is the same program each time.
//   bench_trace_caller LIB CALLS RUNS OUT
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: bench_trace_caller LIB CALLS RUNS OUT\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  auto memFree = lib ? reinterpret_cast<decltype(&::cuMemFree_v2)>(dlsym(lib, "cuMemFree_v2")) : nullptr;
  if (!memFree) {
    std::fprintf(stderr, "bench_trace_caller: %s\n", dlerror());
    return 1;
  }
  const long calls = std::atol(argv[2]), runs = std::atol(argv[3]);
  auto loop = [&](long n) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i)
      memFree(static_cast<CUdeviceptr>(i));
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  loop(calls / 10); // warm up: the first calls resolve symbols and make the counters file
  std::vector<double> ns;
  for (long r = 0; r < runs; ++r)
    ns.push_back(loop(calls));
  std::sort(ns.begin(), ns.end());
  FILE *out = std::fopen(argv[4], "w");
  if (!out)
    return 1;
  std::fprintf(out, "%.2f\n", ns[ns.size() / 2]);
  return std::fclose(out) == 0 ? 0 : 1;
}
