// trace-pattern: calls the CUDA driver API of a library given on the command line (dlopen, like
// the frameworks do) in fixed patterns, so the tracing tests know exactly what should be seen.
//   trace-pattern --lib PATH [--cudart PATH] --pattern NAME [--iterations N] [--seconds S]
//                 [--join-cgroup DIR] [--lookup dlsym|proc-address]
// Patterns:
//   counts    each iteration: cuLaunchKernel x3 (one fails), cuLaunchKernelEx, the four async and the
//             four synchronous copies, the three synchronisations, cuMemAlloc_v2, cuMemFree_v2,
//             and cudaLaunchKernel when --cudart is given
//   clean     a training loop with pinned buffers; the stream is synchronised outside the step
//   pageable  the same loop, but the results are copied back into pageable memory inside the step:
//             cuMemcpyDtoHAsync_v2 waits for the step's kernels (implicit synchronisation)
//   ctxsync   the clean loop, but log_metrics() calls cuCtxSynchronize inside train_step
//   launches  cuLaunchKernel as fast as possible (for --seconds, or N iterations)
// Every function on the way is noinline and the binary keeps frame pointers, so stacks name them.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <vector>

#define NOINLINE __attribute__((noinline))

namespace {

struct Api {
  decltype(&::cuLaunchKernel) launch;
  decltype(&::cuLaunchKernelEx) launchEx;
  decltype(&::cuMemcpyAsync) memcpyAsync;
  decltype(&::cuMemcpyHtoDAsync_v2) htodAsync;
  decltype(&::cuMemcpyDtoHAsync_v2) dtohAsync;
  decltype(&::cuMemcpyDtoDAsync_v2) dtodAsync;
  decltype(&::cuMemcpy) memcpySync;
  decltype(&::cuMemcpyHtoD_v2) htod;
  decltype(&::cuMemcpyDtoH_v2) dtoh;
  decltype(&::cuMemcpyDtoD_v2) dtod;
  decltype(&::cuStreamSynchronize) streamSync;
  decltype(&::cuCtxSynchronize) ctxSync;
  decltype(&::cuEventSynchronize) eventSync;
  decltype(&::cuMemAlloc_v2) memAlloc;
  decltype(&::cuMemFree_v2) memFree;
  decltype(&::cuMemAllocHost_v2) memAllocHost;
  decltype(&::cudaLaunchKernel) rtLaunch = nullptr;
};

// --lookup proc-address: the driver's functions come from cuGetProcAddress by base name, as the
// CUDA runtime finds them ("cuMemFree_v2" is asked for as "cuMemFree").
using ProcAddress = CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
ProcAddress gProcAddress = nullptr;
void *gDriver = nullptr;

template <typename T> void load(void *lib, T &fn, const char *name) {
  if (gProcAddress && lib == gDriver) {
    std::string base = name;
    if (base.size() > 3 && base.compare(base.size() - 3, 3, "_v2") == 0)
      base.resize(base.size() - 3);
    void *p = nullptr;
    CUdriverProcAddressQueryResult status;
    if (gProcAddress(base.c_str(), &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS)
      fn = reinterpret_cast<T>(p);
    else
      fn = nullptr;
  } else {
    fn = reinterpret_cast<T>(dlsym(lib, name));
  }
  if (!fn) {
    fprintf(stderr, "trace-pattern: '%s' not found: %s\n", name, dlerror());
    exit(2);
  }
}

CUfunction kernel() { return reinterpret_cast<CUfunction>(0x1000); }
CUstream stream() { return reinterpret_cast<CUstream>(0x2000); }
constexpr size_t kBatchBytes = 64 * 1024;

NOINLINE void launch_forward(const Api &api, int kernels) {
  for (int k = 0; k < kernels; ++k)
    api.launch(kernel(), 1, 1, 1, 32, 1, 1, 0, stream(), nullptr, nullptr);
}

NOINLINE void load_batch(const Api &api, CUdeviceptr dev, const void *host) {
  api.htodAsync(dev, host, kBatchBytes, stream());
}

NOINLINE void fetch_results(const Api &api, void *host, CUdeviceptr dev) {
  api.dtohAsync(host, dev, kBatchBytes, stream());
}

NOINLINE void log_metrics(const Api &api, bool syncDevice) {
  if (syncDevice)
    api.ctxSync(); // the mistake the ctxsync pattern makes
}

NOINLINE void train_step(const Api &api, CUdeviceptr dev, void *in, void *out, bool syncInStep) {
  load_batch(api, dev, in);
  launch_forward(api, 4);
  fetch_results(api, out, dev);
  log_metrics(api, syncInStep);
}

NOINLINE void end_of_step(const Api &api) { api.streamSync(stream()); }

NOINLINE void training_loop(const Api &api, int steps, bool pinned, bool syncInStep) {
  CUdeviceptr dev = 0;
  api.memAlloc(&dev, kBatchBytes);
  void *in = nullptr, *out = nullptr;
  std::vector<char> pageable(kBatchBytes);
  api.memAllocHost(&in, kBatchBytes);
  if (pinned)
    api.memAllocHost(&out, kBatchBytes);
  else
    out = pageable.data();
  for (int s = 0; s < steps; ++s) {
    train_step(api, dev, in, out, syncInStep);
    end_of_step(api);
  }
  api.memFree(dev);
}

NOINLINE void counts_iteration(const Api &api, std::vector<char> &host, void *pinned) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 32;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = stream();
  api.launch(kernel(), 1, 1, 1, 32, 1, 1, 0, stream(), nullptr, nullptr);
  api.launch(kernel(), 1, 1, 1, 32, 1, 1, 0, stream(), nullptr, nullptr);
  api.launch(nullptr, 1, 1, 1, 32, 1, 1, 0, stream(), nullptr, nullptr); // fails: invalid handle
  api.launchEx(&cfg, kernel(), nullptr, nullptr);
  CUdeviceptr dev = 0;
  api.memAlloc(&dev, 4096);
  api.htodAsync(dev, pinned, 4096, stream());
  api.dtohAsync(pinned, dev, 4096, stream());
  api.memcpyAsync(dev, dev, 4096, stream());
  api.dtodAsync(dev, dev, 4096, stream());
  api.htod(dev, host.data(), 4096);
  api.dtoh(host.data(), dev, 4096);
  api.memcpySync(dev, dev, 4096);
  api.dtod(dev, dev, 4096);
  api.streamSync(stream());
  api.eventSync(reinterpret_cast<CUevent>(0x3000));
  api.ctxSync();
  api.memFree(dev);
  if (api.rtLaunch)
    api.rtLaunch(reinterpret_cast<const void *>(0x1000), dim3(1), dim3(32), nullptr, 0, nullptr);
}

NOINLINE void launches(const Api &api, long iterations, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (long i = 0; iterations ? i < iterations : true; ++i) {
    api.launch(kernel(), 1, 1, 1, 32, 1, 1, 0, stream(), nullptr, nullptr);
    if (!iterations && (i & 1023) == 0 && std::chrono::steady_clock::now() >= end)
      break;
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string lib, cudart, pattern = "counts", cgroup, lookup = "dlsym";
  long iterations = 0;
  double seconds = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i], value = argv[i + 1];
    if (key == "--lib")
      lib = value;
    else if (key == "--cudart")
      cudart = value;
    else if (key == "--pattern")
      pattern = value;
    else if (key == "--iterations")
      iterations = std::atol(value.c_str());
    else if (key == "--seconds")
      seconds = std::atof(value.c_str());
    else if (key == "--join-cgroup")
      cgroup = value;
    else if (key == "--lookup")
      lookup = value;
    else {
      fprintf(stderr, "trace-pattern: unknown option '%s'\n", key.c_str());
      return 2;
    }
  }
  if (!cgroup.empty()) { // before any CUDA call, so every call happens inside the cgroup
    FILE *f = fopen((cgroup + "/cgroup.procs").c_str(), "w");
    if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) != 0) {
      perror("trace-pattern: joining the cgroup");
      return 2;
    }
  }
  void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "trace-pattern: %s\n", dlerror());
    return 2;
  }
  if (lookup == "proc-address") {
    gDriver = h;
    gProcAddress = reinterpret_cast<ProcAddress>(dlsym(h, "cuGetProcAddress_v2"));
    if (!gProcAddress) {
      fprintf(stderr, "trace-pattern: no cuGetProcAddress_v2 in '%s'\n", lib.c_str());
      return 2;
    }
  }
  Api api{};
  load(h, api.launch, "cuLaunchKernel");
  load(h, api.launchEx, "cuLaunchKernelEx");
  load(h, api.memcpyAsync, "cuMemcpyAsync");
  load(h, api.htodAsync, "cuMemcpyHtoDAsync_v2");
  load(h, api.dtohAsync, "cuMemcpyDtoHAsync_v2");
  load(h, api.dtodAsync, "cuMemcpyDtoDAsync_v2");
  load(h, api.memcpySync, "cuMemcpy");
  load(h, api.htod, "cuMemcpyHtoD_v2");
  load(h, api.dtoh, "cuMemcpyDtoH_v2");
  load(h, api.dtod, "cuMemcpyDtoD_v2");
  load(h, api.streamSync, "cuStreamSynchronize");
  load(h, api.ctxSync, "cuCtxSynchronize");
  load(h, api.eventSync, "cuEventSynchronize");
  load(h, api.memAlloc, "cuMemAlloc_v2");
  load(h, api.memFree, "cuMemFree_v2");
  load(h, api.memAllocHost, "cuMemAllocHost_v2");
  if (!cudart.empty()) {
    void *rt = dlopen(cudart.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!rt) {
      fprintf(stderr, "trace-pattern: %s\n", dlerror());
      return 2;
    }
    load(rt, api.rtLaunch, "cudaLaunchKernel");
  }

  if (pattern == "counts") {
    std::vector<char> host(4096);
    void *pinned = nullptr;
    api.memAllocHost(&pinned, 4096);
    for (long i = 0; i < (iterations ? iterations : 10); ++i)
      counts_iteration(api, host, pinned);
  } else if (pattern == "clean" || pattern == "pageable" || pattern == "ctxsync") {
    training_loop(api, static_cast<int>(iterations ? iterations : 8), pattern != "pageable", pattern == "ctxsync");
  } else if (pattern == "launches") {
    launches(api, iterations, seconds);
  } else {
    fprintf(stderr, "trace-pattern: unknown pattern '%s'\n", pattern.c_str());
    return 2;
  }
  return 0;
}
