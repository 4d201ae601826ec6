// What a trace produced: per-function counters and log2 latency histograms (from the kernel), the
// individual events with symbolised stacks, folded stacks, and the implicit synchronisations found
// in them. Plain values: the executor can keep, serialise or compare them without BPF around.
#pragma once

#include "bpf/CudaFunctions.h"
#include "bpf/cuda_trace.h"

#include <llvm/Support/raw_ostream.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace msc::trace {

struct AttachedFunction {
  uint32_t id = 0;
  std::string name;
  std::string library;       // path probed
  uint64_t symbolOffset = 0; // file offset of the symbol
  uint64_t offset = 0;       // file offset of the probe
  bool skippedEndbr64 = false;
  bool timed = true; // entry and return probe; false: counted by an entry probe alone
};

struct FunctionStats {
  uint32_t id = 0;
  std::string name;
  CallKind kind = CallKind::Launch;
  // Latency, errors and the histogram were measured; false: counted only (they stay 0).
  bool timed = true;
  uint64_t calls = 0, errors = 0, totalNs = 0, maxNs = 0;
  // histogram[b] counts calls with latency in [2^b, 2^(b+1)) ns (bucket 0 also holds 0 ns).
  std::array<uint64_t, MSC_TRACE_BUCKETS> histogram{};
  uint64_t histogramCount() const;
  // Upper bound of the bucket holding the q-quantile (q in [0, 1]); 0 when there are no calls.
  uint64_t quantileUpperNs(double q) const;
  uint64_t meanNs() const { return calls ? totalNs / calls : 0; }
};

struct TraceEvent {
  uint32_t fn = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t startNs = 0, latencyNs = 0, stream = 0, bytes = 0, cgroupId = 0;
  int32_t ret = 0;
  std::string comm;
  std::vector<uint64_t> stack;     // return addresses, innermost first
  std::vector<std::string> frames; // symbolised `stack`, innermost first
};

struct ImplicitSync {
  enum class Kind { BlockingAsyncCopy, SyncInStep };
  Kind kind = Kind::BlockingAsyncCopy;
  std::string function;
  uint32_t pid = 0;
  uint64_t count = 0;     // calls with this function and stack
  uint64_t totalNs = 0, maxNs = 0;
  uint64_t waitNs = 0;    // estimated time spent waiting for earlier work, summed
  uint64_t ownNs = 0;     // estimated own time of one call (driver overhead + copy time)
  std::vector<std::string> frames; // innermost first
  std::string reason;
};
llvm::StringRef implicitSyncKindName(ImplicitSync::Kind kind);

struct ImplicitSyncOptions {
  uint64_t minWaitNs = 200'000;       // a blocking async call must wait at least this long
  double minWaitFraction = 0.5;       // and wait for at least this share of its time
                                      // (and at least half the copies of a call site must wait)
  // An async copy's own time: the driver's per-call overhead plus its bytes at the staging bandwidth.
  // Everything above that is time spent waiting for earlier work.
  uint64_t ownBaseNs = 50'000;
  double copyBytesPerNs = 12.0;       // 12 GB/s
  std::string stepFunction;           // frame name marking a training step; empty = no step check
};

struct TraceResults {
  // How the calls were seen: "uprobe" (eBPF on the library) or "interposer" (the preloaded shim).
  std::string mechanism = "uprobe";
  std::vector<int> pids;
  std::string cgroup;
  std::string library, runtimeLibrary;
  uint64_t durationNs = 0;
  std::vector<AttachedFunction> attached;
  std::vector<FunctionStats> functions; // one per attached function, in table order
  uint64_t enters = 0, eventsWritten = 0, eventsReceived = 0, drops = 0, sampledOut = 0;
  uint64_t eventsNotKept = 0; // received but over the keep limit (still in folded stacks)
  std::vector<TraceEvent> events;
  std::map<std::string, uint64_t> folded; // "comm;outer;...;inner;cuFn" -> count
  std::map<std::string, uint64_t> foldedNs; // the same stacks -> their calls' latencies summed
  std::vector<ImplicitSync> implicitSyncs;
  std::optional<int> commandExitStatus;

  const FunctionStats *stats(llvm::StringRef name) const;
};

// Fills results.implicitSyncs from results.events and results.functions.
void detectImplicitSyncs(TraceResults &results, const ImplicitSyncOptions &options);

void writeJson(const TraceResults &results, llvm::raw_ostream &os, bool withEvents = true);
void writeText(const TraceResults &results, llvm::raw_ostream &os, bool histograms);

} // namespace msc::trace
