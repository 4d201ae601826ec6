// mscale-trace: microsecond-level tracing of the CUDA driver of one process, a cgroup or a
// contract, with eBPF uprobes. A thin main over msc_bpf (bpf/TraceSession.h).
#include "bpf/Process.h"
#include "bpf/TraceSession.h"
#include "tools/mscale-trace/FlameOutputs.h"
#include "support/Quantity.h"
#include "support/DiagnosticPrinters.h"
#include "support/ErrorIndex.h"
#include "support/Version.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <csignal>
#include <cstring>

using namespace llvm;

namespace {

cl::OptionCategory category("mscale-trace options");
cl::list<int> pids("pid", cl::desc("Trace these processes (comma-separated)"), cl::CommaSeparated,
                   cl::value_desc("pid"), cl::cat(category));
cl::opt<std::string> cgroup("cgroup", cl::desc("Trace the processes of this cgroup v2 directory and below"),
                            cl::value_desc("path"), cl::cat(category));
cl::opt<std::string> contract("contract",
                              cl::desc("Trace a contract: its cgroup <cgroup2 mount>/mscale/<ID>"),
                              cl::value_desc("ID"), cl::cat(category));
cl::opt<std::string> duration("duration",
                              cl::desc("How long to trace, e.g. 60s, 500ms, 2m (default: 10s; with a command: "
                                       "until it exits)"),
                              cl::value_desc("time"), cl::cat(category));
cl::opt<std::string> lib("lib", cl::desc("CUDA driver library to probe (default: libcuda.so* in the target's maps)"),
                         cl::value_desc("path"), cl::cat(category));
cl::opt<std::string> cudart("cudart", cl::desc("CUDA runtime library to probe for cudaLaunchKernel "
                                               "(default: libcudart.so* in the maps, if any)"),
                            cl::value_desc("path"), cl::cat(category));
enum class Mode { Count, Latency, Stacks };
cl::opt<Mode> mode(
    "mode", cl::desc("What a trace measures (default: stacks)"), cl::init(Mode::Stacks),
    cl::values(clEnumValN(Mode::Count, "count",
                          "count every call with an entry probe alone; latency and events only for the "
                          "synchronising calls (the cheapest)"),
               clEnumValN(Mode::Latency, "latency",
                          "entry and return probes on every call: errors, latency histograms, events above "
                          "--min-latency, no stacks"),
               clEnumValN(Mode::Stacks, "stacks", "as latency, and events carry user stacks")),
    cl::cat(category));
cl::opt<msc::trace::TraceMechanism> via(
    "via", cl::desc("How calls are seen (default: uprobe)"), cl::init(msc::trace::TraceMechanism::Uprobe),
    cl::values(clEnumValN(msc::trace::TraceMechanism::Uprobe, "uprobe",
                          "eBPF uprobes on the library: any process, needs root, microseconds per call"),
               clEnumValN(msc::trace::TraceMechanism::Interposer, "interposer",
                          "the preloaded CUDA interposer: the command after '--', or workers publishing in "
                          "--counters-dir; no privileges, nanoseconds per call, no stacks")),
    cl::cat(category));
cl::opt<std::string> interposer("interposer",
                                cl::desc("The interposer library to preload (default: "
                                         "lib/libmscale_cuda_interposer.so beside this tool's bin/)"),
                                cl::value_desc("path"), cl::cat(category));
cl::opt<std::string> countersDir("counters-dir",
                                 cl::desc("With --via interposer: the directory in which preloaded processes "
                                          "publish their counters (mscale-exec run --cuda-counters DIR)"),
                                 cl::value_desc("dir"), cl::cat(category));
cl::opt<bool> totals("totals",
                          cl::desc("With --counters-dir: report what the files hold since each process started, "
                                   "not the calls of a --duration window"),
                          cl::cat(category));
cl::opt<bool> histogram("histogram", cl::desc("Print log2 latency histograms per function"), cl::cat(category));
cl::opt<std::string> foldedFile("folded", cl::desc("Write folded stacks (flame-graph input) to this file; with "
                                                   "render: the folded file to draw"),
                                cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> flamegraphFile("flamegraph",
                                    cl::desc("Write a zoomable flame graph of the folded stacks (SVG) to this file"),
                                    cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> speedscopeFile("speedscope",
                                    cl::desc("Write the folded stacks in speedscope's format (JSON) to this file"),
                                    cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> graphTitle("title", cl::desc("Title of the flame graph and the speedscope profile"),
                                cl::init("CUDA calls"), cl::value_desc("text"), cl::cat(category));
cl::opt<bool> json("json", cl::desc("Print the results as JSON on stdout"), cl::cat(category));
cl::opt<std::string> minLatency("min-latency", cl::desc("Only calls at least this long become events (default 100us)"),
                                cl::value_desc("time"), cl::init("100us"), cl::cat(category));
cl::opt<unsigned> sample("sample", cl::desc("Keep one event in N (after --min-latency)"), cl::init(1),
                         cl::value_desc("N"), cl::cat(category));
cl::opt<bool> noStacks("no-stacks", cl::desc("Do not capture user stacks"), cl::cat(category));
cl::opt<bool> noEvents("no-events", cl::desc("Counters and histograms only, no individual events"),
                       cl::cat(category));
cl::opt<std::string> stepFunction("step-function",
                                  cl::desc("Function that marks a training step: a cuCtxSynchronize or "
                                           "cuStreamSynchronize called from it is reported"),
                                  cl::value_desc("name"), cl::cat(category));
cl::opt<std::string> implicitMinWait("implicit-sync-min-wait",
                                     cl::desc("An async call waiting at least this long is an implicit "
                                              "synchronisation (default 200us)"),
                                     cl::value_desc("time"), cl::init("200us"), cl::cat(category));
cl::opt<unsigned> ringbufKb("ringbuf-kb", cl::desc("Ring buffer size in KiB (rounded up to a power of two)"),
                            cl::init(4096), cl::cat(category));
cl::opt<std::string> btf("btf", cl::desc("Kernel BTF file (default: /sys/kernel/btf/vmlinux)"),
                         cl::value_desc("path"), cl::cat(category));
cl::opt<bool> noPreflight("no-preflight", cl::desc("Skip the privilege and BTF checks; let the kernel decide"),
                          cl::cat(category));
cl::opt<bool> noSkipEndbr("no-skip-endbr64", cl::desc("Attach at the symbol even when it starts with endbr64"),
                          cl::cat(category));
cl::opt<std::string> lockdownFile("lockdown-file", cl::desc("Kernel lockdown state file (for tests)"),
                                  cl::init("/sys/kernel/security/lockdown"), cl::Hidden, cl::cat(category));
cl::opt<bool> verbose("verbose", cl::desc("Print libbpf's debug messages"), cl::cat(category));
cl::opt<std::string> explain("explain", cl::desc("Print the long explanation of an error code"),
                             cl::value_desc("CODE"), cl::cat(category));
cl::opt<msc::DiagnosticsFormat> diagFormat(
    "diagnostics-format", cl::desc("How diagnostics are printed (on stderr)"), cl::init(msc::DiagnosticsFormat::Text),
    cl::values(clEnumValN(msc::DiagnosticsFormat::Text, "text", "clang-style text"),
               clEnumValN(msc::DiagnosticsFormat::Json, "json", "a JSON array"),
               clEnumValN(msc::DiagnosticsFormat::Sarif, "sarif", "SARIF 2.1.0")),
    cl::cat(category));

enum ExitStatus { kOk = 0, kTraceFailed = 1, kUsageOrIo = 2 };

// lib/libmscale_cuda_interposer.so beside the bin/ that holds this tool (build tree and install alike).
std::string defaultInterposerPath(const char *argv0) {
  std::string exe = sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&defaultInterposerPath));
  SmallString<256> path(sys::path::parent_path(sys::path::parent_path(exe)));
  sys::path::append(path, "lib", "libmscale_cuda_interposer.so");
  return std::string(path);
}

std::atomic<bool> gStop{false};
void onSignal(int) { gStop = true; }

} // namespace

int main(int argc, char **argv) {
  // Everything after "--" is the command to run under the trace.
  std::vector<std::string> command;
  // `mscale-trace render --folded FILE --flamegraph OUT`: draw a folded file recorded earlier; no BPF.
  bool renderMode = argc > 1 && std::strcmp(argv[1], "render") == 0;
  if (renderMode) {
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  int ownArgc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      ownArgc = i;
      for (int j = i + 1; j < argc; ++j)
        command.push_back(argv[j]);
      break;
    }
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscale-trace " << msc::kVersion << "\n"; });
  cl::ParseCommandLineOptions(ownArgc, argv,
                              "MegaScale-Omni CUDA driver tracer (eBPF uprobes)\n\n"
                              "  mscale-trace --pid P | --cgroup PATH | --contract ID [options]\n"
                              "  mscale-trace --lib PATH [options] -- command args...\n"
                              "  mscale-trace --via interposer [--mode count|latency] -- command args...\n"
                              "  mscale-trace --via interposer --counters-dir DIR [--pid P] [options]\n"
                              "  mscale-trace render --folded FILE [--flamegraph OUT.svg] [--speedscope OUT.json]\n");

  std::unique_ptr<msc::DiagnosticConsumer> printer =
      msc::makeDiagnosticPrinter(diagFormat, errs(), "mscale-trace", msc::kVersion);
  msc::DiagnosticEngine diags(nullptr, *printer);
  auto usage = [&](const std::string &what) {
    diags.report(msc::DiagCode::ERR_DRV_005) << what;
    diags.finish();
    return kUsageOrIo;
  };

  if (!explain.empty()) {
    bool explained = msc::printExplanation(explain, outs(), diags);
    diags.finish();
    return explained ? kOk : kUsageOrIo;
  }

  msc::tracetool::FlameOutputs flame{flamegraphFile, speedscopeFile, graphTitle, {}};
  if (renderMode) {
    if (!pids.empty() || !cgroup.empty() || !contract.empty() || !command.empty())
      return usage("'render' draws a folded file: give no --pid, --cgroup, --contract or command");
    if (foldedFile.empty() || !flame.any())
      return usage("'render' needs --folded FILE and --flamegraph OUT.svg or --speedscope OUT.json");
    int status = msc::tracetool::renderFoldedFile(foldedFile, flame, diags);
    diags.finish();
    return status;
  }

  unsigned targets = (!pids.empty()) + (!cgroup.empty()) + (!contract.empty());
  if (targets > 1)
    return usage("give only one of --pid, --cgroup and --contract");
  if (targets == 0 && command.empty() && countersDir.empty())
    return usage("give --pid, --cgroup or --contract, or a command after '--' (or --counters-dir with --via "
                 "interposer)");

  bool viaInterposer = via == msc::trace::TraceMechanism::Interposer;
  // The interposer sees no stacks: it counts unless told otherwise; uprobes keep stacks by default.
  Mode measure = mode.getNumOccurrences() ? Mode(mode) : viaInterposer ? Mode::Count : Mode::Stacks;
  if (viaInterposer) {
    if (!cgroup.empty() || !contract.empty())
      return usage("--via interposer reads the processes of --counters-dir or runs a command, not --cgroup or "
                   "--contract");
    if (command.empty() && countersDir.empty())
      return usage("--via interposer needs a command after '--' or --counters-dir");
    if (totals && (!command.empty() || countersDir.empty() || !duration.empty()))
      return usage("--totals goes with --counters-dir, without a command or --duration");
    if (measure == Mode::Stacks)
      return usage("--via interposer records no stacks: use --mode count or --mode latency");
  } else if (!countersDir.empty() || !interposer.empty() || totals) {
    return usage("--counters-dir, --interposer and --totals go with --via interposer");
  }

  msc::trace::TraceOptions opts;
  opts.mechanism = via;
  opts.countersDir = countersDir;
  opts.interposerPath = interposer.empty() ? defaultInterposerPath(argv[0]) : std::string(interposer);
  opts.pids.assign(pids.begin(), pids.end());
  opts.cgroupPath = cgroup;
  if (!contract.empty()) {
    std::string mount = msc::trace::cgroup2Mount();
    bool exists = false;
    std::string path = msc::trace::contractCgroupPath(contract, mount.empty() ? "/sys/fs/cgroup" : mount, exists);
    if (!exists) {
      diags.report(msc::DiagCode::ERR_TRACE_006) << contract << path;
      diags.finish();
      return kTraceFailed;
    }
    opts.cgroupPath = path;
  }
  opts.command = command;
  opts.libPath = lib;
  opts.runtimeLibPath = cudart;
  if (!duration.empty()) {
    auto ns = msc::parseDurationNs(duration);
    if (!ns || !*ns)
      return usage("--duration '" + duration + "' is not a duration like 60s, 500ms or 2m");
    opts.duration = std::chrono::nanoseconds(*ns);
  } else {
    opts.duration = command.empty() ? std::chrono::nanoseconds(std::chrono::seconds(10)) : std::chrono::nanoseconds(0);
  }
  if (totals)
    opts.duration = std::chrono::nanoseconds(0);
  auto minLat = msc::parseDurationNs(minLatency);
  if (!minLat)
    return usage("--min-latency '" + minLatency + "' is not a duration like 100us");
  opts.minLatencyNs = *minLat;
  auto minWait = msc::parseDurationNs(implicitMinWait);
  if (!minWait)
    return usage("--implicit-sync-min-wait '" + implicitMinWait + "' is not a duration like 200us");
  opts.implicitSync.minWaitNs = *minWait;
  opts.implicitSync.stepFunction = stepFunction;
  if (!sample)
    return usage("--sample must be at least 1");
  if (ringbufKb < 4 || ringbufKb > (1u << 20))
    return usage("--ringbuf-kb must be between 4 and 1048576");
  opts.sampleEvery = sample;
  opts.timeAll = measure != Mode::Count;
  opts.events = !noEvents;
  opts.stacks = measure == Mode::Stacks && !noStacks;
  opts.histogram = true;
  opts.ringBufferBytes = size_t{ringbufKb} * 1024;
  opts.btfPath = btf;
  opts.preflight = !noPreflight;
  opts.skipEndbr64 = !noSkipEndbr;
  opts.lockdownPath = lockdownFile;
  opts.verbose = verbose;

  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  std::optional<msc::trace::TraceResults> results = msc::trace::runTrace(opts, diags, [] { return gStop.load(); });
  if (!results) {
    diags.finish();
    return kTraceFailed;
  }
  if (!foldedFile.empty()) {
    std::error_code ec;
    raw_fd_ostream out(foldedFile, ec, sys::fs::OF_Text);
    if (ec) {
      diags.report(msc::DiagCode::ERR_DRV_004) << foldedFile << ec.message();
      diags.finish();
      return kUsageOrIo;
    }
    // Through msc_render so implicit synchronisations keep their `_[implicit-sync]` mark for `render`.
    msc::render::writeFolded(msc::tracetool::foldedProfileOf(*results), out);
  }
  if (flame.any()) {
    flame.subtitle = opts.cgroupPath.empty() ? "traced " + std::to_string(results->pids.size()) + " process(es)"
                                             : "traced cgroup " + opts.cgroupPath;
    if (!msc::tracetool::writeFlameOutputs(msc::tracetool::foldedProfileOf(*results), flame, diags)) {
      diags.finish();
      return kUsageOrIo;
    }
  }
  if (json)
    msc::trace::writeJson(*results, outs());
  else
    msc::trace::writeText(*results, outs(), histogram);
  outs().flush();
  diags.finish();
  return kOk;
}
