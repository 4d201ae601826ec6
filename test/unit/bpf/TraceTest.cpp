// Tests of msc_bpf against the fake libcuda with real uprobes. The BPF tests need root and kernel
// BTF and skip (saying why) without them; the ELF tests run anywhere.
#include "bpf/ElfFile.h"
#include "bpf/Process.h"
#include "bpf/TraceSession.h"

#include <gtest/gtest.h>

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace msc;
using namespace msc::trace;

namespace {

const std::string kFake = MSC_FAKE_CUDA_DIR;
const std::string kPattern = MSC_TRACE_PATTERN;
std::string lib(const std::string &variant) { return kFake + "/" + variant + "/libcuda.so.1"; }
std::string cudart() { return kFake + "/plain/libcudart.so.12"; }

#define REQUIRE_BPF()                                                                                  \
  do {                                                                                                 \
    if (!currentPrivileges().canTrace())                                                               \
      GTEST_SKIP() << "needs root (or CAP_BPF and CAP_PERFMON) for uprobes";                           \
    if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)                                                \
      GTEST_SKIP() << "needs kernel BTF at /sys/kernel/btf/vmlinux";                                   \
  } while (0)

std::string messages(const CollectingConsumer &c) {
  std::string out;
  for (const Diagnostic &d : c.diags)
    out += std::string(diagInfo(d.code).name) + ": " + d.message + "\n";
  return out;
}

TraceResults traceOrFail(const TraceOptions &opts, CollectingConsumer &diagsOut) {
  DiagnosticEngine diags(nullptr, diagsOut);
  std::optional<TraceResults> r = runTrace(opts, diags);
  EXPECT_TRUE(r.has_value()) << messages(diagsOut);
  EXPECT_FALSE(diags.hasErrors()) << messages(diagsOut);
  return r ? std::move(*r) : TraceResults{};
}

TraceOptions patternRun(const std::string &variant, const std::string &pattern, int iterations,
                        std::vector<std::string> extra = {}) {
  TraceOptions opts;
  opts.libPath = lib(variant);
  opts.duration = std::chrono::nanoseconds(0); // until the command exits
  opts.command = {kPattern, "--lib", lib(variant), "--pattern", pattern, "--iterations", std::to_string(iterations)};
  opts.command.insert(opts.command.end(), extra.begin(), extra.end());
  return opts;
}

uint64_t calls(const TraceResults &r, llvm::StringRef fn) {
  const FunctionStats *s = r.stats(fn);
  return s ? s->calls : ~uint64_t{0};
}

// A process that is not traced but calls the same library the whole time.
struct Background {
  pid_t pid = -1;
  explicit Background(const std::string &variant, double seconds = 30) {
    pid = fork();
    if (pid == 0) {
      std::string s = std::to_string(seconds);
      execl(kPattern.c_str(), kPattern.c_str(), "--lib", lib(variant).c_str(), "--pattern", "launches", "--seconds",
            s.c_str(), static_cast<char *>(nullptr));
      _exit(127);
    }
    usleep(200 * 1000); // let it map the library and start calling
  }
  ~Background() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

// ---- ELF: attach points ------------------------------------------------------------------------

TEST(TraceElf, PlainFunctionsAreProbedAtTheSymbol) {
  std::string error;
  auto elf = ElfFile::open(lib("plain"), error);
  ASSERT_TRUE(elf) << error;
  auto sym = elf->findFunction("cuLaunchKernel");
  ASSERT_TRUE(sym);
  AttachPoint ap = chooseAttachPoint(*elf, *sym);
  EXPECT_EQ(ap.firstBytes[0], 0x55) << "expected push %rbp first";
  EXPECT_FALSE(ap.skippedEndbr64);
  EXPECT_EQ(ap.offset, ap.symbolOffset);
}

TEST(TraceElf, Endbr64IsSkipped) {
  std::string error;
  auto elf = ElfFile::open(lib("cet"), error);
  ASSERT_TRUE(elf) << error;
  for (const char *name : {"cuLaunchKernel", "cuMemcpyHtoDAsync_v2", "cuCtxSynchronize"}) {
    auto sym = elf->findFunction(name);
    ASSERT_TRUE(sym) << name;
    AttachPoint ap = chooseAttachPoint(*elf, *sym);
    EXPECT_EQ(std::vector<uint8_t>(ap.firstBytes, ap.firstBytes + 4), (std::vector<uint8_t>{0xf3, 0x0f, 0x1e, 0xfa}));
    EXPECT_TRUE(ap.skippedEndbr64) << name;
    EXPECT_EQ(ap.offset, ap.symbolOffset + 4) << name;
    EXPECT_EQ(elf->readAt(ap.offset, 1), std::vector<uint8_t>{0x55}) << name << ": push %rbp after endbr64";
    AttachPoint exact = chooseAttachPoint(*elf, *sym, /*skipEndbr64=*/false);
    EXPECT_EQ(exact.offset, exact.symbolOffset);
  }
}

TEST(TraceElf, StrippedLibraryResolvesThroughDynsym) {
  std::string error;
  auto stripped = ElfFile::open(lib("stripped"), error);
  ASSERT_TRUE(stripped) << error;
  auto full = ElfFile::open(lib("cet"), error);
  ASSERT_TRUE(full) << error;
  EXPECT_FALSE(full->findFunction("async_copy") == std::nullopt) << "static function visible in .symtab";
  EXPECT_EQ(stripped->findFunction("async_copy"), std::nullopt) << "strip --strip-all must drop .symtab";
  for (const CudaFunction &fn : cudaFunctions()) {
    if (fn.library != CudaLibrary::Driver)
      continue;
    auto a = stripped->findFunction(fn.name), b = full->findFunction(fn.name);
    ASSERT_TRUE(a && b) << fn.name.str();
    EXPECT_TRUE(a->dynamic);
    EXPECT_EQ(chooseAttachPoint(*stripped, *a).offset, chooseAttachPoint(*full, *b).offset) << fn.name.str();
  }
}

TEST(TraceHistogram, QuantilesAreBucketUpperBounds) {
  FunctionStats f;
  f.histogram[10] = 90; // [1024, 2048)
  f.histogram[20] = 10; // [1 Mi, 2 Mi)
  EXPECT_EQ(f.histogramCount(), 100u);
  EXPECT_EQ(f.quantileUpperNs(0.5), 2047u);
  EXPECT_EQ(f.quantileUpperNs(0.9), 2047u);
  EXPECT_EQ(f.quantileUpperNs(0.95), (1u << 21) - 1);
}

// A copy that waited once among several at its call site was preempted (a busy machine), not made
// synchronous: the site is reported only when at least half of its copies waited.
TEST(TraceImplicitSync, OneSlowCopyAmongManyIsNoise) {
  uint32_t copy = 0;
  for (uint32_t i = 0; i < cudaFunctions().size(); ++i)
    if (cudaFunctions()[i].name == "cuMemcpyDtoHAsync_v2")
      copy = i;
  auto run = [&](int slow, int fast) {
    TraceResults r;
    for (int i = 0; i < slow + fast; ++i) {
      TraceEvent e;
      e.fn = copy;
      e.pid = 7;
      e.bytes = 4096;
      e.latencyNs = i < slow ? 4'000'000 : 60'000;
      e.frames = {"fetch_results", "train_step"};
      r.events.push_back(e);
    }
    detectImplicitSyncs(r, ImplicitSyncOptions{});
    return r.implicitSyncs.size();
  };
  EXPECT_EQ(run(1, 4), 0u);
  EXPECT_EQ(run(3, 2), 1u);
  EXPECT_EQ(run(1, 0), 1u); // a single copy that waited is all its site did
}

// ---- uprobes: exact counts ---------------------------------------------------------------------

void expectExactCounts(const std::string &variant) {
  constexpr int n = 40;
  TraceOptions opts = patternRun(variant, "counts", n, {"--cudart", cudart()});
  opts.runtimeLibPath = cudart();
  opts.minLatencyNs = ~uint64_t{0} >> 1; // counters and histograms only
  CollectingConsumer c;
  TraceResults r = traceOrFail(opts, c);
  ASSERT_EQ(r.commandExitStatus, 0);
  EXPECT_EQ(calls(r, "cuLaunchKernel"), 3u * n);
  EXPECT_EQ(r.stats("cuLaunchKernel")->errors, 1u * n);
  for (const char *fn : {"cuLaunchKernelEx", "cuMemcpyAsync", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
                         "cuMemcpyDtoDAsync_v2", "cuMemcpy", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2",
                         "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuMemAlloc_v2",
                         "cuMemFree_v2", "cudaLaunchKernel"}) {
    EXPECT_EQ(calls(r, fn), uint64_t{n}) << fn;
    EXPECT_EQ(r.stats(fn)->errors, 0u) << fn;
  }
  for (const FunctionStats &f : r.functions) {
    EXPECT_EQ(f.histogramCount(), f.calls) << f.name;
    EXPECT_GE(f.maxNs, f.meanNs()) << f.name;
  }
  EXPECT_EQ(r.attached.size(), 16u);
}

TEST(TraceUprobes, ExactCountsPlain) {
  REQUIRE_BPF();
  expectExactCounts("plain");
}

TEST(TraceUprobes, ExactCountsEndbr64AttachedPastIt) {
  REQUIRE_BPF();
  expectExactCounts("cet");
}

TEST(TraceUprobes, ExactCountsStrippedLibrary) {
  REQUIRE_BPF();
  expectExactCounts("stripped");
}

TEST(TraceUprobes, HistogramsSeparateFastAndSlowCalls) {
  REQUIRE_BPF();
  // Each step: 4 launches of 2 ms device time each, then end_of_step waits for them.
  TraceOptions opts = patternRun("plain", "clean", 6);
  opts.command.insert(opts.command.begin(), {"/usr/bin/env", "FAKECUDA_KERNEL_US=2000"});
  opts.events = false;
  CollectingConsumer c;
  TraceResults r = traceOrFail(opts, c);
  const FunctionStats *launch = r.stats("cuLaunchKernel");
  const FunctionStats *sync = r.stats("cuStreamSynchronize");
  ASSERT_TRUE(launch && sync);
  EXPECT_EQ(launch->calls, 24u);
  EXPECT_EQ(sync->calls, 6u);
  EXPECT_EQ(sync->histogramCount(), 6u);
  EXPECT_EQ(launch->histogramCount(), 24u);
  // The sync cannot return before the 8 ms of device time queued ahead of it: its calls are in the
  // buckets of 4 ms and more, however loaded the machine. How fast a launch returns is the machine's
  // (an upper bound here failed under load), so it is not asserted: bench/trace measures the probes.
  EXPECT_GE(sync->quantileUpperNs(0.5), 1u << 22) << "syncs over ~4 ms";
  EXPECT_GE(sync->maxNs, 8'000'000u);
  EXPECT_LE(launch->quantileUpperNs(0.5), sync->quantileUpperNs(0.5)) << "the histograms are the calls' own";
}

// ---- stacks and implicit synchronisation -------------------------------------------------------

bool hasFrame(const std::vector<std::string> &frames, llvm::StringRef name) {
  return std::any_of(frames.begin(), frames.end(),
                     [&](const std::string &f) { return f.find(name.str()) != std::string::npos; });
}

TEST(TraceStacks, EventsCarryTheCallers) {
  REQUIRE_BPF();
  TraceOptions opts = patternRun("plain", "clean", 5);
  opts.minLatencyNs = 0;
  CollectingConsumer c;
  TraceResults r = traceOrFail(opts, c);
  size_t htod = 0;
  for (const TraceEvent &e : r.events) {
    if (cudaFunction(e.fn).name != "cuMemcpyHtoDAsync_v2")
      continue;
    ++htod;
    EXPECT_TRUE(hasFrame(e.frames, "load_batch")) << llvm::join(e.frames, " <- ");
    EXPECT_TRUE(hasFrame(e.frames, "train_step")) << llvm::join(e.frames, " <- ");
    EXPECT_TRUE(hasFrame(e.frames, "main")) << llvm::join(e.frames, " <- ");
    EXPECT_EQ(e.bytes, 64u * 1024);
    EXPECT_EQ(e.stream, 0x2000u);
  }
  EXPECT_EQ(htod, 5u);
  EXPECT_EQ(r.drops, 0u);
  EXPECT_EQ(r.eventsReceived, r.enters) << "every call became an event";
  // Folded stacks: outermost first, the CUDA function last, counts add up.
  uint64_t foldedHtod = 0;
  for (const auto &[stack, count] : r.folded)
    if (llvm::StringRef(stack).ends_with(";cuMemcpyHtoDAsync_v2")) {
      EXPECT_NE(stack.find("train_step"), std::string::npos) << stack;
      EXPECT_LT(stack.find("train_step"), stack.find("load_batch")) << stack;
      foldedHtod += count;
    }
  EXPECT_EQ(foldedHtod, 5u);
}

TEST(TraceImplicitSync, PageableCopyInsideTheStepIsFound) {
  REQUIRE_BPF();
  TraceOptions opts = patternRun("plain", "pageable", 6);
  opts.command.insert(opts.command.begin(), {"/usr/bin/env", "FAKECUDA_KERNEL_US=500"});
  CollectingConsumer c;
  TraceResults r = traceOrFail(opts, c);
  ASSERT_EQ(r.implicitSyncs.size(), 1u);
  const ImplicitSync &s = r.implicitSyncs[0];
  EXPECT_EQ(s.kind, ImplicitSync::Kind::BlockingAsyncCopy);
  EXPECT_EQ(s.function, "cuMemcpyDtoHAsync_v2");
  EXPECT_EQ(s.count, 6u);
  EXPECT_TRUE(hasFrame(s.frames, "fetch_results"));
  EXPECT_TRUE(hasFrame(s.frames, "train_step"));
  EXPECT_GE(s.waitNs, 6u * 1'500'000) << "each waits for ~2 ms of kernels";
  EXPECT_TRUE(std::any_of(c.diags.begin(), c.diags.end(),
                          [](const Diagnostic &d) { return d.code == DiagCode::WRN_TRACE_003; }));
}

TEST(TraceImplicitSync, CleanLoopHasNone) {
  REQUIRE_BPF();
  TraceOptions opts = patternRun("plain", "clean", 6);
  opts.command.insert(opts.command.begin(), {"/usr/bin/env", "FAKECUDA_KERNEL_US=500"});
  opts.implicitSync.stepFunction = "train_step";
  CollectingConsumer c;
  TraceResults r = traceOrFail(opts, c);
  EXPECT_EQ(calls(r, "cuStreamSynchronize"), 6u);
  EXPECT_GE(r.stats("cuStreamSynchronize")->quantileUpperNs(0.5), 1'000'000u) << "the syncs did wait";
  EXPECT_TRUE(r.implicitSyncs.empty()) << r.implicitSyncs.front().reason;
}

TEST(TraceImplicitSync, CtxSynchronizeInsideTheStepIsFound) {
  REQUIRE_BPF();
  TraceOptions opts = patternRun("plain", "ctxsync", 6);
  opts.implicitSync.stepFunction = "train_step";
  CollectingConsumer c;
  TraceResults r = traceOrFail(opts, c);
  ASSERT_EQ(r.implicitSyncs.size(), 1u);
  EXPECT_EQ(r.implicitSyncs[0].kind, ImplicitSync::Kind::SyncInStep);
  EXPECT_EQ(r.implicitSyncs[0].function, "cuCtxSynchronize");
  EXPECT_EQ(r.implicitSyncs[0].count, 6u);
  EXPECT_TRUE(hasFrame(r.implicitSyncs[0].frames, "log_metrics"));
}

// ---- filtering ---------------------------------------------------------------------------------

TEST(TraceFilter, PidFilterKeepsOtherProcessesOut) {
  REQUIRE_BPF();
  Background other("plain");
  TraceOptions opts = patternRun("plain", "counts", 25);
  opts.minLatencyNs = 0;
  CollectingConsumer c;
  TraceResults r = traceOrFail(opts, c);
  EXPECT_EQ(calls(r, "cuLaunchKernel"), 75u);
  for (const TraceEvent &e : r.events)
    EXPECT_EQ(e.pid, static_cast<uint32_t>(r.pids.at(0)));

  // The same probes do see the other process when asked to.
  TraceOptions theirs;
  theirs.pids = {other.pid};
  theirs.libPath = lib("plain");
  theirs.duration = std::chrono::milliseconds(300);
  theirs.events = false;
  CollectingConsumer c2;
  TraceResults r2 = traceOrFail(theirs, c2);
  EXPECT_GT(calls(r2, "cuLaunchKernel"), 1000u);
}

TEST(TraceFilter, CgroupFilterKeepsOtherProcessesOut) {
  REQUIRE_BPF();
  std::string mount = cgroup2Mount();
  if (mount.empty())
    GTEST_SKIP() << "no cgroup2 mount";
  std::string dir = mount + "/msc-trace-test-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir << ": " << strerror(errno);
  {
    Background other("plain");
    TraceOptions opts = patternRun("plain", "counts", 30, {"--join-cgroup", dir});
    opts.cgroupPath = dir;
    opts.minLatencyNs = 0;
    CollectingConsumer c;
    TraceResults r = traceOrFail(opts, c);
    EXPECT_EQ(r.commandExitStatus, 0);
    EXPECT_EQ(calls(r, "cuLaunchKernel"), 90u);
    EXPECT_EQ(calls(r, "cuCtxSynchronize"), 30u);
    auto id = cgroupId(dir);
    ASSERT_TRUE(id);
    for (const TraceEvent &e : r.events)
      EXPECT_EQ(e.cgroupId, *id);
  }
  EXPECT_EQ(rmdir(dir.c_str()), 0) << strerror(errno);
}

// ---- failure modes -----------------------------------------------------------------------------

TEST(TraceErrors, MissingPidAndBadLibraryAreCoded) {
  CollectingConsumer c;
  DiagnosticEngine diags(nullptr, c);
  TraceOptions opts;
  opts.preflight = false;
  opts.pids = {999999999};
  EXPECT_FALSE(TraceSession::start(opts, diags));
  ASSERT_EQ(c.diags.size(), 1u);
  EXPECT_EQ(c.diags[0].code, DiagCode::ERR_TRACE_004);

  c.diags.clear();
  opts.pids = {getpid()};
  opts.libPath = "/proc/self/status";
  EXPECT_FALSE(TraceSession::start(opts, diags));
  ASSERT_EQ(c.diags.size(), 1u);
  EXPECT_EQ(c.diags[0].code, DiagCode::ERR_TRACE_008);
}

} // namespace
