// bench_trace: per-call cost of the CUDA uprobes, measured in this process on the fake libcuda.
// The probed call is cuMemFree_v2 (a few ns of its own). Modes: probes off, counters and
// histograms only, events with user stacks for every call; first instruction `push %rbp`
// (emulated by the kernel) and `endbr64` (single-stepped) probed at +0, or past it at +4.
// Then events per second through the ring buffer, and drops, with every call an event.
// Prints medians of 5 runs and ratios against "off" from the same run. Not a Google Benchmark
// main: a trace session costs seconds to set up and tear down, so each mode runs once.
#include "bpf/Process.h"
#include "bpf/TraceSession.h"

#include <cuda.h>

#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <dlfcn.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace msc;
using namespace msc::trace;

namespace {

using FreeFn = decltype(&::cuMemFree_v2);
constexpr int kCalls = 200000;
constexpr int kRuns = 5;

double nsPerCall(FreeFn fn, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    fn(static_cast<CUdeviceptr>(i));
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / calls;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Mode {
  const char *name;
  const char *variant; // plain | cet
  bool trace, events, skipEndbr;
};

} // namespace

int main() {
  const std::string dir = MSC_FAKE_CUDA_DIR;
  if (!currentPrivileges().canTrace() || access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    llvm::outs() << "bench_trace: skipped: needs root (or CAP_BPF+CAP_PERFMON) and /sys/kernel/btf/vmlinux\n";
    return 0;
  }
  FreeFn fns[2];
  const char *variants[2] = {"plain", "cet"};
  for (int i = 0; i < 2; ++i) {
    void *h = dlopen((dir + "/" + variants[i] + "/libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h || !(fns[i] = reinterpret_cast<FreeFn>(dlsym(h, "cuMemFree_v2")))) {
      llvm::errs() << "bench_trace: cannot load the fake libcuda from " << dir << ": " << dlerror() << "\n";
      return 1;
    }
  }
  const Mode modes[] = {
      {"off (push %rbp)", "plain", false, false, true},
      {"off (endbr64)", "cet", false, false, true},
      {"counters, push %rbp at +0", "plain", true, false, true},
      {"counters, endbr64 at +0", "cet", true, false, false},
      {"counters, endbr64 skipped (+4)", "cet", true, false, true},
      {"events+stacks, push %rbp at +0", "plain", true, true, true},
      {"events+stacks, endbr64 at +0", "cet", true, true, false},
      {"events+stacks, endbr64 skipped (+4)", "cet", true, true, true},
  };
  llvm::outs() << "bench_trace: " << kCalls << " calls of cuMemFree_v2 per run, median of " << kRuns << " runs\n\n";
  llvm::outs() << "mode                                          ns/call      x off  overhead ns\n";
  double off[2] = {0, 0};
  for (const Mode &m : modes) {
    int v = std::string(m.variant) == "cet";
    CollectingConsumer c;
    DiagnosticEngine diags(nullptr, c);
    std::unique_ptr<TraceSession> session;
    if (m.trace) {
      TraceOptions opts;
      opts.pids = {getpid()};
      opts.libPath = dir + "/" + m.variant + "/libcuda.so.1";
      opts.events = m.events;
      opts.stacks = m.events;
      opts.minLatencyNs = 0;
      opts.skipEndbr64 = m.skipEndbr;
      opts.ringBufferBytes = 64u << 20;
      session = TraceSession::start(opts, diags);
      if (!session) {
        llvm::errs() << "bench_trace: cannot start a trace: "
                     << (c.diags.empty() ? std::string("?") : c.diags.back().message) << "\n";
        return 1;
      }
    }
    std::atomic<bool> done{false};
    std::thread reader;
    if (session && m.events)
      reader = std::thread([&] {
        while (!done)
          session->poll(10);
      });
    std::vector<double> runs;
    nsPerCall(fns[v], kCalls / 10); // warm up
    for (int r = 0; r < kRuns; ++r)
      runs.push_back(nsPerCall(fns[v], kCalls));
    done = true;
    if (reader.joinable())
      reader.join();
    double med = median(runs);
    if (!m.trace)
      off[v] = med;
    llvm::outs() << llvm::format("%-40s %12.1f %10.1f %12.1f\n", m.name, med, med / off[v], med - off[v]);
    if (session) {
      TraceResults res = session->finish(diags);
      const FunctionStats *s = res.stats("cuMemFree_v2");
      uint64_t expected = static_cast<uint64_t>(kCalls) * kRuns + kCalls / 10;
      if (!s || s->calls != expected)
        llvm::outs() << "  (count mismatch: " << (s ? s->calls : 0) << " != " << expected << ")\n";
    }
  }

  // Throughput of events: every call an event with a stack, 64 MiB ring, reader polling every 10 ms.
  for (size_t ringMiB : {4, 64}) {
    CollectingConsumer c;
    DiagnosticEngine diags(nullptr, c);
    TraceOptions opts;
    opts.pids = {getpid()};
    opts.libPath = dir + "/plain/libcuda.so.1";
    opts.minLatencyNs = 0;
    opts.ringBufferBytes = ringMiB << 20;
    auto session = TraceSession::start(opts, diags);
    if (!session)
      return 1;
    std::atomic<bool> done{false};
    std::thread reader([&] {
      while (!done)
        session->poll(10);
    });
    const int calls = 2'000'000;
    auto t0 = std::chrono::steady_clock::now();
    nsPerCall(fns[0], calls);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    done = true;
    reader.join();
    TraceResults res = session->finish(diags);
    llvm::outs() << llvm::format("\nevents with stacks, %zu MiB ring: %d calls in %.2f s = %.0f calls/s; ", ringMiB,
                                 calls, secs, calls / secs)
                 << res.eventsReceived << " events received, " << res.drops << " dropped ("
                 << llvm::format("%.1f%%", 100.0 * res.drops / calls) << ")\n";
  }
  return 0;
}
