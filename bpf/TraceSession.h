// A running trace of the CUDA driver (and runtime) of some processes: preflight checks, library
// discovery, the BPF skeleton (opened, configured, loaded), the uprobes, the ring-buffer reader.
// Every failure is a coded diagnostic (ERR_TRACE_*) and leaves nothing attached.
//
//   TraceOptions opts;
//   opts.cgroupPath = "/sys/fs/cgroup/unified/mscale/c42";
//   opts.duration = std::chrono::seconds(60);
//   if (auto results = runTrace(opts, diags))
//     writeJson(*results, llvm::outs());
#pragma once

#include "bpf/TraceResults.h"
#include "support/Diagnostic.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::trace {

// How calls are seen: eBPF uprobes on the library (any process, root, microseconds per call), or
// the interposer preloaded into the processes (started with it, no privileges, nanoseconds per call).
enum class TraceMechanism { Uprobe, Interposer };

struct TraceOptions {
  TraceMechanism mechanism = TraceMechanism::Uprobe;
  // Interposer: the library preloaded into the command, and the directory in which preloaded
  // processes publish their counters (empty with a command: a fresh one, removed afterwards).
  std::string interposerPath;
  std::string countersDir;

  // Whom to trace. Any combination narrows; with none of them (and no command) every process
  // that uses the library is traced.
  std::vector<int> pids;
  std::string cgroupPath; // a cgroup v2 directory; its descendants are included
  // Run this command (argv) under the trace: it starts once the probes are attached, it is traced
  // by pid unless pids or a cgroup are given, and the trace ends when it exits.
  std::vector<std::string> command;

  std::string libPath;        // libcuda; empty: the first libcuda.so* mapped by a target process
  std::string runtimeLibPath; // libcudart; empty: found in the maps when present (optional)
  std::chrono::nanoseconds duration = std::chrono::seconds(10);

  bool histogram = true;
  // Return probes (latency, errors, histograms, events) on every function; false: only on the
  // synchronising ones (isSynchronising), the others are counted by one entry probe each.
  bool timeAll = true;
  bool events = true;             // individual events (of timed functions) through the ring buffer
  bool stacks = true;             // with user stacks (needs frame pointers in the target)
  uint64_t minLatencyNs = 100'000; // events only for calls at least this long ...
  uint32_t sampleEvery = 1;        // ... and one in N of those
  size_t ringBufferBytes = 4u << 20; // power of two, >= 4096
  size_t maxKeptEvents = 100'000;
  bool skipEndbr64 = true;        // attach 4 bytes in when a function starts with endbr64
  ImplicitSyncOptions implicitSync;

  // Checks before loading; off = let the kernel decide (its error is still reported).
  bool preflight = true;
  std::string btfPath;            // empty: /sys/kernel/btf/vmlinux
  std::string lockdownPath = "/sys/kernel/security/lockdown";
  bool verbose = false;           // libbpf debug messages to stderr too
};

class TraceSession {
public:
  // Opens, loads and attaches; nullptr (with diagnostics reported) when tracing is impossible.
  static std::unique_ptr<TraceSession> start(const TraceOptions &options, DiagnosticEngine &diags);
  ~TraceSession(); // the one cleanup path: detach, free, reap the command
  TraceSession(const TraceSession &) = delete;
  TraceSession &operator=(const TraceSession &) = delete;

  // Waits up to `timeoutMs` for events and consumes what is queued. False once the command has
  // exited (when there is one).
  bool poll(int timeoutMs);
  // Polls until the duration has passed, the command has exited or `stop` returns true.
  void run(const std::function<bool()> &stop = {});
  // Detaches, reads the counters and histograms, symbolises, detects implicit syncs.
  TraceResults finish(DiagnosticEngine &diags);

private:
  struct Impl;
  explicit TraceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// start + run + finish, or runInterposerTrace (bpf/InterposerTrace.h) for the interposer.
std::optional<TraceResults> runTrace(const TraceOptions &options, DiagnosticEngine &diags,
                                     const std::function<bool()> &stop = {});

} // namespace msc::trace
