#include "bpf/TraceResults.h"

#include "support/Quantity.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/JSON.h>

#include <algorithm>
#include <tuple>

namespace msc::trace {
namespace {

// "ns::(anonymous namespace)::train_step(Api const&, int)" -> "ns::(anonymous namespace)::train_step":
// drop the parameter list, the parentheses that close the name.
llvm::StringRef functionName(llvm::StringRef frame) {
  llvm::StringRef f = frame.rtrim();
  if (f.ends_with(" const"))
    f = f.drop_back(6);
  if (!f.ends_with(")"))
    return frame;
  int depth = 0;
  for (size_t i = f.size(); i-- > 0;) {
    if (f[i] == ')')
      ++depth;
    else if (f[i] == '(' && --depth == 0)
      return f.take_front(i);
  }
  return frame;
}

// The step function matches by name, qualified or not: "train_step" matches "Trainer::train_step(int)".
bool isStepFrame(llvm::StringRef frame, llvm::StringRef step) {
  llvm::StringRef name = functionName(frame);
  return name == step || (name.ends_with(step) && name.drop_back(step.size()).ends_with("::"));
}

} // namespace

llvm::StringRef implicitSyncKindName(ImplicitSync::Kind kind) {
  return kind == ImplicitSync::Kind::BlockingAsyncCopy ? "blocking-async-copy" : "sync-in-step";
}

uint64_t FunctionStats::histogramCount() const {
  uint64_t n = 0;
  for (uint64_t c : histogram)
    n += c;
  return n;
}

uint64_t FunctionStats::quantileUpperNs(double q) const {
  uint64_t total = histogramCount();
  if (!total)
    return 0;
  uint64_t want = static_cast<uint64_t>(q * static_cast<double>(total) + 0.999999);
  want = std::clamp<uint64_t>(want, 1, total);
  uint64_t seen = 0;
  for (size_t b = 0; b < histogram.size(); ++b) {
    seen += histogram[b];
    if (seen >= want)
      return (uint64_t{1} << (b + 1)) - 1;
  }
  return uint64_t{1} << histogram.size();
}

const FunctionStats *TraceResults::stats(llvm::StringRef name) const {
  for (const FunctionStats &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

void detectImplicitSyncs(TraceResults &results, const ImplicitSyncOptions &options) {
  results.implicitSyncs.clear();
  using Key = std::tuple<int, uint32_t, uint32_t, std::vector<std::string>>;
  std::map<Key, ImplicitSync> found;
  std::map<Key, uint64_t> copiesAtSite; // every async copy of a call site, blocking or not
  for (const TraceEvent &e : results.events) {
    const CudaFunction &fn = cudaFunction(e.fn);
    ImplicitSync candidate;
    uint64_t wait = 0, own = 0;
    if (fn.kind == CallKind::AsyncCopy) {
      ++copiesAtSite[Key{static_cast<int>(ImplicitSync::Kind::BlockingAsyncCopy), e.fn, e.pid, e.frames}];
      own = options.ownBaseNs + static_cast<uint64_t>(static_cast<double>(e.bytes) / options.copyBytesPerNs);
      wait = e.latencyNs > own ? e.latencyNs - own : 0;
      if (wait < options.minWaitNs || static_cast<double>(wait) < options.minWaitFraction * static_cast<double>(e.latencyNs))
        continue;
      candidate.kind = ImplicitSync::Kind::BlockingAsyncCopy;
    } else if (fn.kind == CallKind::Sync && fn.name != "cuEventSynchronize" && !options.stepFunction.empty()) {
      if (std::none_of(e.frames.begin(), e.frames.end(),
                       [&](const std::string &f) { return isStepFrame(f, options.stepFunction); }))
        continue;
      candidate.kind = ImplicitSync::Kind::SyncInStep;
      wait = e.latencyNs;
    } else {
      continue;
    }
    Key key{static_cast<int>(candidate.kind), e.fn, e.pid, e.frames};
    ImplicitSync &s = found[key];
    if (!s.count) {
      s.kind = candidate.kind;
      s.function = fn.name.str();
      s.pid = e.pid;
      s.frames = e.frames;
      s.ownNs = own;
    }
    ++s.count;
    s.totalNs += e.latencyNs;
    s.maxNs = std::max(s.maxNs, e.latencyNs);
    s.waitNs += wait;
  }
  for (auto &[key, s] : found) {
    // A copy that blocked once among many was preempted, not synchronised: a call site is reported
    // when at least half of its copies waited.
    if (s.kind == ImplicitSync::Kind::BlockingAsyncCopy && s.count * 2 < copiesAtSite[key])
      continue;
    if (s.kind == ImplicitSync::Kind::BlockingAsyncCopy)
      s.reason = "'" + s.function + "' is asynchronous but waited " + formatMeasuredNs(s.waitNs / s.count) +
                 " per call on average for earlier work (own time about " + formatMeasuredNs(s.ownNs) +
                 "): pageable host memory or a dependency made it synchronous";
    else
      s.reason = "'" + s.function + "' inside '" + options.stepFunction +
                 "' stops the host until all queued work is done, " + formatMeasuredNs(s.totalNs / s.count) +
                 " per call";
    results.implicitSyncs.push_back(std::move(s));
  }
  std::stable_sort(results.implicitSyncs.begin(), results.implicitSyncs.end(),
                   [](const ImplicitSync &a, const ImplicitSync &b) { return a.waitNs > b.waitNs; });
}

void writeJson(const TraceResults &r, llvm::raw_ostream &os, bool withEvents) {
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attributeObject("target", [&] {
      j.attributeArray("pids", [&] {
        for (int p : r.pids)
          j.value(p);
      });
      j.attribute("cgroup", r.cgroup);
      j.attribute("library", r.library);
      j.attribute("runtime_library", r.runtimeLibrary);
    });
    j.attribute("mechanism", r.mechanism);
    j.attribute("duration_ns", r.durationNs);
    if (r.commandExitStatus)
      j.attribute("command_exit_status", *r.commandExitStatus);
    j.attributeArray("attached", [&] {
      for (const AttachedFunction &a : r.attached)
        j.object([&] {
          j.attribute("function", a.name);
          j.attribute("library", a.library);
          j.attribute("symbol_offset", a.symbolOffset);
          j.attribute("offset", a.offset);
          j.attribute("endbr64_skipped", a.skippedEndbr64);
          j.attribute("timed", a.timed);
        });
    });
    j.attributeArray("functions", [&] {
      for (const FunctionStats &f : r.functions)
        j.object([&] {
          j.attribute("function", f.name);
          j.attribute("kind", callKindName(f.kind));
          j.attribute("calls", f.calls);
          j.attribute("errors", f.errors);
          j.attribute("total_ns", f.totalNs);
          j.attribute("mean_ns", f.meanNs());
          j.attribute("max_ns", f.maxNs);
          j.attribute("p50_ns_le", f.quantileUpperNs(0.5));
          j.attribute("p99_ns_le", f.quantileUpperNs(0.99));
          j.attributeArray("histogram", [&] {
            for (size_t b = 0; b < f.histogram.size(); ++b)
              if (f.histogram[b])
                j.object([&] {
                  j.attribute("ge_ns", b ? uint64_t{1} << b : 0);
                  j.attribute("lt_ns", uint64_t{1} << (b + 1));
                  j.attribute("count", f.histogram[b]);
                });
          });
          j.attribute("timed", f.timed);
        });
    });
    j.attributeObject("events", [&] {
      j.attribute("entries", r.enters);
      j.attribute("written", r.eventsWritten);
      j.attribute("received", r.eventsReceived);
      j.attribute("dropped", r.drops);
      j.attribute("sampled_out", r.sampledOut);
      j.attribute("not_kept", r.eventsNotKept);
      if (withEvents)
        j.attributeArray("list", [&] {
          for (const TraceEvent &e : r.events)
            j.object([&] {
              j.attribute("function", cudaFunction(e.fn).name);
              j.attribute("pid", e.pid);
              j.attribute("tid", e.tid);
              j.attribute("comm", e.comm);
              j.attribute("start_ns", e.startNs);
              j.attribute("latency_ns", e.latencyNs);
              j.attribute("result", e.ret);
              j.attribute("stream", e.stream);
              j.attribute("bytes", e.bytes);
              j.attributeArray("stack", [&] {
                for (const std::string &f : e.frames)
                  j.value(f);
              });
            });
        });
    });
    j.attributeArray("implicit_syncs", [&] {
      for (const ImplicitSync &s : r.implicitSyncs)
        j.object([&] {
          j.attribute("kind", implicitSyncKindName(s.kind));
          j.attribute("function", s.function);
          j.attribute("pid", s.pid);
          j.attribute("count", s.count);
          j.attribute("total_ns", s.totalNs);
          j.attribute("max_ns", s.maxNs);
          j.attribute("wait_ns", s.waitNs);
          j.attribute("reason", s.reason);
          j.attributeArray("stack", [&] {
            for (const std::string &f : s.frames)
              j.value(f);
          });
        });
    });
  });
  os << "\n";
}

void writeText(const TraceResults &r, llvm::raw_ostream &os, bool histograms) {
  os << "traced";
  if (!r.pids.empty()) {
    os << " pid";
    for (int p : r.pids)
      os << " " << p;
  }
  if (!r.cgroup.empty())
    os << " cgroup '" << r.cgroup << "'";
  os << " for " << formatMeasuredNs(r.durationNs) << " through '" << r.library << "'";
  if (r.mechanism != "uprobe")
    os << " (" << r.mechanism << ")";
  if (!r.runtimeLibrary.empty())
    os << " and '" << r.runtimeLibrary << "'";
  os << "\n\n";
  os << "function                      calls  errors        mean       p50<=       p99<=         max\n";
  for (const FunctionStats &f : r.functions) {
    if (!f.calls)
      continue;
    if (!f.timed) { // counted only: no latency to show, and errors were not seen
      const char *kDash = "-";
      os << llvm::format("%-24s %10llu %7s %11s %11s %11s %11s\n", f.name.c_str(), (unsigned long long)f.calls,
                         kDash, kDash, kDash, kDash, kDash);
      continue;
    }
    os << llvm::format("%-24s %10llu %7llu %11s %11s %11s %11s\n", f.name.c_str(), (unsigned long long)f.calls,
                       (unsigned long long)f.errors, formatMeasuredNs(f.meanNs()).c_str(),
                       formatMeasuredNs(f.quantileUpperNs(0.5)).c_str(), formatMeasuredNs(f.quantileUpperNs(0.99)).c_str(),
                       formatMeasuredNs(f.maxNs).c_str());
  }
  if (histograms) {
    for (const FunctionStats &f : r.functions) {
      if (!f.calls || !f.timed)
        continue;
      os << "\n" << f.name << " latency (ns): " << f.histogramCount() << " calls\n";
      uint64_t peak = *std::max_element(f.histogram.begin(), f.histogram.end());
      size_t first = f.histogram.size(), last = 0;
      for (size_t b = 0; b < f.histogram.size(); ++b)
        if (f.histogram[b]) {
          first = std::min(first, b);
          last = b;
        }
      for (size_t b = first; b <= last; ++b) {
        unsigned width = peak ? static_cast<unsigned>(40 * f.histogram[b] / peak) : 0;
        os << llvm::format("  %12llu -> %-12llu : %-10llu |%-40s|\n", (unsigned long long)(b ? 1ULL << b : 0),
                           (unsigned long long)((1ULL << (b + 1)) - 1), (unsigned long long)f.histogram[b],
                           std::string(width, '*').c_str());
      }
    }
  }
  os << "\nevents: " << r.eventsReceived << " received, " << r.drops << " dropped, " << r.sampledOut
     << " sampled out\n";
  if (r.implicitSyncs.empty()) {
    os << "implicit synchronisation: none found\n";
    return;
  }
  os << "implicit synchronisation: " << r.implicitSyncs.size() << " call site(s)\n";
  for (const ImplicitSync &s : r.implicitSyncs) {
    os << "\n  [" << implicitSyncKindName(s.kind) << "] " << s.function << " x" << s.count << " (pid " << s.pid
       << "), waited " << formatMeasuredNs(s.waitNs) << " in total, max call " << formatMeasuredNs(s.maxNs) << "\n    "
       << s.reason << "\n";
    for (const std::string &f : s.frames)
      os << "      " << f << "\n";
  }
}

} // namespace msc::trace
