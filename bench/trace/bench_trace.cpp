// bench_trace: per-call cost of tracing the CUDA driver, against an untraced run of the same
// program. bench_trace_caller calls cuMemFree_v2 (a few ns of its own) of a fake libcuda in a loop
// and reports its median ns per call; it runs untraced, under uprobes (count, latency and stack
// modes) and with the interposer preloaded (count and latency), for the fake compiled several ways
// (bench/trace/CMakeLists.txt): the uprobe cost depends on the probed instruction, the interposer's
// does not. Every traced run checks its count is exact. Arguments: the variants to run (default: all). Then events per second through the ring
// buffer, with every call an event. Not a Google Benchmark main: a trace costs seconds to set up.
#include "bpf/Process.h"
#include "bpf/TraceSession.h"

#include <cuda.h>

#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

using namespace msc;
using namespace msc::trace;

namespace {

using FreeFn = decltype(&::cuMemFree_v2);
constexpr long kRuns = 5;
constexpr long kProbedCalls = 50'000;    // per run, under uprobes (microseconds each)
constexpr long kCheapCalls = 2'000'000;  // per run, untraced and with the interposer

double nsPerCall(FreeFn fn, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    fn(static_cast<CUdeviceptr>(i));
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / calls;
}

struct Variant {
  const char *name;
  const char *entry; // what cuMemFree_v2 starts with
};
const Variant kVariants[] = {
    {"o0", "-O0: push %rbp"},
    {"o2fp", "-O2 frame pointers: push %rbp"},
    {"cet", "-O2 -fcf-protection, frame pointers: endbr64; push %rbp"},
    {"cet2", "-O2 -fcf-protection: endbr64; RIP-relative cmp"},
    {"nofp", "-O2 -fomit-frame-pointer: RIP-relative cmp"},
    {"hot", "hot entry: add 0x8(%rsp),%r9d"},
    {"nop5", "5-byte nop 0f 1f 44 00 00"},
    {"clang5", "clang -fpatchable-function-entry=5: 5-byte nop 0f 1f 44 00 08"},
};

enum class Mode { Off, Count, Latency, Stacks };
struct Config {
  const char *name;
  Mode mode;
  TraceMechanism mechanism;
  bool skipEndbr64 = true;
};
const Config kConfigs[] = {
    {"off", Mode::Off, TraceMechanism::Uprobe},
    {"uprobe count", Mode::Count, TraceMechanism::Uprobe},
    {"uprobe count, endbr64 at +0", Mode::Count, TraceMechanism::Uprobe, false},
    {"uprobe latency", Mode::Latency, TraceMechanism::Uprobe},
    {"uprobe stacks (every call)", Mode::Stacks, TraceMechanism::Uprobe},
    {"interposer count", Mode::Count, TraceMechanism::Interposer},
    {"interposer latency", Mode::Latency, TraceMechanism::Interposer},
};

double readNumber(const std::string &path) {
  std::ifstream in(path);
  double v = -1;
  in >> v;
  return v;
}

// The caller untraced: its median ns per call, < 0 on failure.
double runUntraced(const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? readNumber(args.back()) : -1;
}

} // namespace

// bench_trace [VARIANT...]: only these variants (default: all).
int main(int argc, char **argv) {
  std::vector<std::string> only(argv + 1, argv + argc);
  const std::string benchDir = MSC_BENCH_FAKE_CUDA_DIR, out = "/tmp/bench_trace." + std::to_string(getpid());
  bool canTrace = currentPrivileges().canTrace() && access("/sys/kernel/btf/vmlinux", R_OK) == 0;
  if (!canTrace)
    llvm::outs() << "bench_trace: uprobe rows skipped: they need root (or CAP_BPF+CAP_PERFMON) and "
                    "/sys/kernel/btf/vmlinux\n";
  llvm::outs() << "bench_trace: cuMemFree_v2 of the fake libcuda, median of " << kRuns << " runs of " << kProbedCalls
               << " calls (uprobes) or " << kCheapCalls << " (untraced, interposer)\n";
  for (const Variant &v : kVariants) {
    if (!only.empty() && std::find(only.begin(), only.end(), v.name) == only.end())
      continue;
    std::string lib = benchDir + "/" + v.name + "/libcuda.so.1";
    llvm::outs() << "\n" << v.name << " (" << v.entry << ")\n";
    llvm::outs() << "  mechanism, mode                       ns/call      x off  overhead ns\n";
    double off = 0;
    for (const Config &c : kConfigs) {
      if (!c.skipEndbr64 && std::string(v.name).rfind("cet", 0) != 0)
        continue;
      if (c.mechanism == TraceMechanism::Uprobe && c.mode != Mode::Off && !canTrace)
        continue;
      long calls = c.mechanism == TraceMechanism::Uprobe && c.mode != Mode::Off ? kProbedCalls : kCheapCalls;
      std::vector<std::string> args = {MSC_BENCH_CALLER, lib, std::to_string(calls), std::to_string(kRuns), out};
      double ns = -1;
      std::string note;
      if (c.mode == Mode::Off) {
        ns = off = runUntraced(args);
      } else {
        CollectingConsumer sink;
        DiagnosticEngine diags(nullptr, sink);
        TraceOptions opts;
        opts.mechanism = c.mechanism;
        opts.interposerPath = MSC_INTERPOSER;
        opts.command = args;
        opts.libPath = lib;
        opts.duration = std::chrono::nanoseconds(0);
        opts.timeAll = c.mode != Mode::Count;
        opts.events = c.mode == Mode::Stacks;
        opts.stacks = c.mode == Mode::Stacks;
        opts.minLatencyNs = 0; // stack mode: every call is an event with a stack (the worst case)
        opts.ringBufferBytes = 64u << 20;
        opts.skipEndbr64 = c.skipEndbr64;
        std::optional<TraceResults> res = runTrace(opts, diags);
        if (!res) {
          llvm::outs() << "  " << c.name << ": cannot trace: "
                       << (sink.diags.empty() ? std::string("?") : sink.diags.back().message) << "\n";
          continue;
        }
        ns = readNumber(out);
        const FunctionStats *s = res->stats("cuMemFree_v2");
        uint64_t expected = static_cast<uint64_t>(calls * kRuns + calls / 10);
        if (!s || s->calls != expected)
          note = "  (count mismatch: " + std::to_string(s ? s->calls : 0) + " != " + std::to_string(expected) + ")";
      }
      llvm::outs() << llvm::format("  %-34s %10.1f %10.1f %12.1f", c.name, ns, off > 0 ? ns / off : 0.0, ns - off)
                   << note << "\n";
    }
  }
  std::remove(out.c_str());
  if (!canTrace)
    return 0;

  const std::string dir = MSC_FAKE_CUDA_DIR;
  void *h = dlopen((dir + "/plain/libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
  FreeFn plainFree = h ? reinterpret_cast<FreeFn>(dlsym(h, "cuMemFree_v2")) : nullptr;
  if (!plainFree) {
    llvm::errs() << "bench_trace: cannot load the fake libcuda from " << dir << ": " << dlerror() << "\n";
    return 1;
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
    nsPerCall(plainFree, calls);
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
