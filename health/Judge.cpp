// The pure health judge; see Judge.h.
#include "health/Judge.h"

#include "health/KernelLog.h"
#include "support/Units.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace msc::health {

llvm::StringRef levelName(Level level) {
  switch (level) {
  case Level::Healthy:
    return "healthy";
  case Level::Degraded:
    return "degraded";
  case Level::Failed:
    return "failed";
  }
  return "failed";
}

int exitStatus(Level level) { return level == Level::Healthy ? 0 : level == Level::Degraded ? 1 : 2; }

namespace {

std::string celsius(int64_t milli) { return llvm::formatv("{0:f1} C", double(milli) / 1000.0).str(); }
std::string duration(uint64_t ns) { return llvm::formatv("{0:f3}s", double(ns) / 1e9).str(); }

class Judging {
public:
  Judging(const Sample &now, const Sample *previous, const Sample *first, const Policy &policy)
      : now_(now), previous_(previous), first_(first), policy_(policy) {
    verdict_.monotonicNs = now.monotonicNs;
    verdict_.notes = now.notes;
    // A previous sample from a later time is from another boot (kept with --state): its counters
    // started again from zero, so growth is not judged against it.
    if (previous_ && previous_->monotonicNs > now_.monotonicNs) {
      verdict_.notes.push_back("the previous sample is from another boot: growth not judged");
      previous_ = nullptr;
      first_ = nullptr;
    }
  }

  Verdict run() {
    thermal();
    rdma();
    edac();
    hugepages();
    nvme();
    gpus();
    gpuXids();
    kernelLog();
    malformed();
    if (!previous_)
      verdict_.notes.push_back("one sample: counter growth (RDMA errors, corrected memory errors, NVMe media "
                               "errors, GPU corrected ECC errors) not judged");
    std::stable_sort(verdict_.reasons.begin(), verdict_.reasons.end(),
                     [](const Reason &a, const Reason &b) { return a.level > b.level; });
    return std::move(verdict_);
  }

private:
  void add(DiagCode code, Level level, std::vector<std::string> args, std::string path, std::string evidence) {
    verdict_.reasons.push_back({code, level, formatDiag(diagInfo(code).format, args), std::move(path),
                                std::move(evidence)});
    verdict_.level = std::max(verdict_.level, level);
  }

  uint64_t elapsedNs() const { return now_.monotonicNs - previous_->monotonicNs; }

  void thermal() {
    for (const ThermalReading &t : now_.thermal) {
      if (!t.limitMilliC)
        continue;
      std::string evidence = std::to_string(t.tempMilliC);
      if (t.tempMilliC >= *t.limitMilliC)
        add(DiagCode::ERR_HEALTH_001, Level::Failed, {t.name, celsius(t.tempMilliC), celsius(*t.limitMilliC)}, t.path,
            evidence);
      else if (t.tempMilliC >= *t.limitMilliC - policy_.thermalWarnMarginMilliC)
        add(DiagCode::WRN_HEALTH_001, Level::Degraded,
            {t.name, celsius(t.tempMilliC), celsius(policy_.thermalWarnMarginMilliC), celsius(*t.limitMilliC)},
            t.path, evidence);
    }
  }

  void rdma() {
    for (const RdmaReading &r : now_.rdma) {
      if (r.state != "ACTIVE")
        add(DiagCode::ERR_HEALTH_002, Level::Failed, {r.key(), r.state.empty() ? "unknown" : r.state},
            r.path + "/state", r.state);
      if (!previous_)
        continue;
      auto before = llvm::find_if(previous_->rdma, [&](const RdmaReading &p) { return p.key() == r.key(); });
      if (before == previous_->rdma.end())
        continue;
      for (auto &[name, value] : r.errorCounters) {
        auto old = before->errorCounters.find(name);
        if (old == before->errorCounters.end() || value <= old->second)
          continue;
        uint64_t grew = value - old->second;
        uint64_t ns = elapsedNs();
        double perMinute = ns ? double(grew) * 60e9 / double(ns) : double(grew) * 60e9;
        if (perMinute <= policy_.rdmaErrorsPerMinute)
          continue;
        add(DiagCode::WRN_HEALTH_002, Level::Degraded,
            {r.key(), name, std::to_string(grew), duration(ns), llvm::formatv("{0:f1}", perMinute).str(),
             llvm::formatv("{0:f1}", policy_.rdmaErrorsPerMinute).str()},
            r.path + "/counters/" + name, std::to_string(old->second) + " -> " + std::to_string(value));
      }
    }
  }

  void edac() {
    for (const EdacReading &e : now_.edac) {
      if (e.uncorrected > 0)
        add(DiagCode::ERR_HEALTH_003, Level::Failed, {e.controller, std::to_string(e.uncorrected)},
            e.path + "/ue_count", std::to_string(e.uncorrected));
      if (!previous_)
        continue;
      auto before = llvm::find_if(previous_->edac, [&](const EdacReading &p) { return p.controller == e.controller; });
      if (before == previous_->edac.end() || e.corrected <= before->corrected ||
          e.corrected - before->corrected <= policy_.edacCorrectedGrowth)
        continue;
      add(DiagCode::WRN_HEALTH_003, Level::Degraded,
          {e.controller, std::to_string(e.corrected - before->corrected), duration(elapsedNs())}, e.path + "/ce_count",
          std::to_string(before->corrected) + " -> " + std::to_string(e.corrected));
    }
  }

  void hugepages() {
    if (!first_)
      return;
    for (const HugepageReading &h : now_.hugepages) {
      auto at = llvm::find_if(first_->hugepages, [&](const HugepageReading &f) {
        return f.numaNode == h.numaNode && f.pageSize == h.pageSize;
      });
      if (at == first_->hugepages.end() || h.total >= at->total)
        continue;
      add(DiagCode::WRN_HEALTH_004, Level::Degraded,
          {formatBytes(Bytes{h.pageSize}), std::to_string(h.numaNode), std::to_string(at->total), std::to_string(h.total)},
          h.path, std::to_string(at->total) + " -> " + std::to_string(h.total));
    }
  }

  void nvme() {
    static constexpr std::pair<uint8_t, const char *> failing[] = {
        {0x04, "reliability degraded"}, {0x08, "read-only"}, {0x10, "volatile memory backup failed"},
        {0x20, "persistent memory region read-only"}};
    static constexpr std::pair<uint8_t, const char *> degrading[] = {{0x01, "available spare below threshold"},
                                                                     {0x02, "temperature out of range"}};
    auto describe = [](uint8_t bits, auto &table) {
      std::string out;
      for (auto &[bit, what] : table)
        if (bits & bit)
          out += (out.empty() ? "" : ", ") + std::string(what);
      return out;
    };
    for (const NvmeReading &n : now_.nvme) {
      std::string hex = llvm::utohexstr(n.criticalWarning, /*LowerCase=*/true);
      if (hex.size() < 2)
        hex.insert(0, "0");
      std::string evidence = "critical warning 0x" + hex + ", available spare " + std::to_string(n.availableSpare) +
                             "% (threshold " + std::to_string(n.spareThreshold) + "%), media errors " +
                             std::to_string(n.mediaErrors);
      if (std::string f = describe(n.criticalWarning, failing); !f.empty())
        add(DiagCode::ERR_HEALTH_004, Level::Failed, {n.controller, hex, f}, n.path, evidence);
      else if (std::string d = describe(n.criticalWarning, degrading); !d.empty())
        add(DiagCode::WRN_HEALTH_005, Level::Degraded, {n.controller, hex, d}, n.path, evidence);
      if (!previous_)
        continue;
      auto before = llvm::find_if(previous_->nvme, [&](const NvmeReading &p) { return p.controller == n.controller; });
      if (before != previous_->nvme.end() && n.mediaErrors > before->mediaErrors)
        add(DiagCode::WRN_HEALTH_006, Level::Degraded,
            {n.controller, std::to_string(before->mediaErrors), std::to_string(n.mediaErrors)}, n.path, evidence);
    }
  }

  // A GPU whose memory lost data (uncorrected ECC errors since its driver loaded) or cannot be
  // repaired (a row remapping failure) is failed: the next job there may read corrupted weights. A
  // repair waiting for a reset, or corrected errors growing, is a degraded GPU: it still computes.
  void gpus() {
    for (const GpuMemoryReading &g : now_.gpus) {
      std::string evidence = "ECC corrected " + (g.eccCorrected ? std::to_string(*g.eccCorrected) : "-") +
                             ", uncorrected " + (g.eccUncorrected ? std::to_string(*g.eccUncorrected) : "-") +
                             (g.retirementPending ? ", page retirement pending" : "") +
                             (g.remapPending ? ", row remapping pending" : "") +
                             (g.remapFailed ? ", row remapping failed" : "");
      if (g.eccUncorrected && *g.eccUncorrected)
        add(DiagCode::ERR_HEALTH_008, Level::Failed, {g.pci, std::to_string(*g.eccUncorrected)}, g.library, evidence);
      if (g.remapFailed)
        add(DiagCode::ERR_HEALTH_009, Level::Failed, {g.pci}, g.library, evidence);
      if (g.retirementPending || g.remapPending)
        add(DiagCode::WRN_HEALTH_008, Level::Degraded,
            {g.pci, g.remapPending ? "a remapped row" : "retired pages"}, g.library, evidence);
      if (!previous_ || !g.eccCorrected)
        continue;
      auto before = llvm::find_if(previous_->gpus, [&](const GpuMemoryReading &p) { return p.pci == g.pci; });
      if (before != previous_->gpus.end() && before->eccCorrected &&
          *g.eccCorrected > *before->eccCorrected + policy_.gpuEccCorrectedGrowth)
        add(DiagCode::WRN_HEALTH_009, Level::Degraded,
            {g.pci, std::to_string(*before->eccCorrected), std::to_string(*g.eccCorrected)}, g.library, evidence);
    }
  }

  // An Xid NVML delivered judges as the same Xid in the kernel log does (a fatal one fails the node,
  // another degrades it), for as long as the sample carries it: until the node reboots (carryGpuXids).
  void gpuXids() {
    for (const GpuXidReading &x : now_.gpuXids) {
      bool fatal = isFatalXid(x.xid);
      std::string evidence = "nvmlEventTypeXidCriticalError, eventData " + std::to_string(x.xid) + ": " +
                             std::to_string(x.events) + " event(s), the first drained at " + duration(x.firstNs) +
                             ", the last at " + duration(x.lastNs) + " on the monotonic clock";
      add(fatal ? DiagCode::ERR_HEALTH_010 : DiagCode::WRN_HEALTH_010, fatal ? Level::Failed : Level::Degraded,
          {x.pci, std::to_string(x.xid), std::to_string(x.events)}, x.library, evidence);
    }
  }

  void kernelLog() {
    for (const KernelLogClass &k : now_.kernelLog) {
      bool fatal = llvm::StringRef(k.name).ends_with("-fatal") || k.name == "edac-ue";
      add(fatal ? DiagCode::ERR_HEALTH_005 : DiagCode::WRN_HEALTH_007, fatal ? Level::Failed : Level::Degraded,
          {std::to_string(k.lines), k.name}, now_.kernelLogPath.value_or("/dev/kmsg"), k.last);
    }
  }

  void malformed() {
    for (const Malformed &m : now_.malformed)
      add(DiagCode::ERR_HEALTH_006, Level::Degraded, {m.text, m.path, m.expected}, m.path, m.text);
  }

  const Sample &now_;
  const Sample *previous_;
  const Sample *first_;
  const Policy &policy_;
  Verdict verdict_;
};

} // namespace

Verdict judge(const Sample &now, const Sample *previous, const Sample *first, const Policy &policy) {
  return Judging(now, previous, first, policy).run();
}

void carryGpuXids(Sample &now, const Sample &previous) {
  if (previous.monotonicNs > now.monotonicNs)
    return; // another boot: its GPUs were reset since
  std::vector<GpuXidReading> carried = previous.gpuXids;
  for (GpuXidReading &x : now.gpuXids) {
    auto seen = llvm::find_if(carried, [&](const GpuXidReading &c) { return c.pci == x.pci && c.xid == x.xid; });
    if (seen == carried.end()) {
      carried.push_back(std::move(x));
      continue;
    }
    seen->events += x.events;
    seen->lastNs = x.lastNs;
    seen->library = std::move(x.library);
  }
  now.gpuXids = std::move(carried);
}

Verdict Monitor::observe(Sample sample) {
  if (previous_)
    carryGpuXids(sample, *previous_);
  Verdict v = judge(sample, previous_ ? &*previous_ : nullptr, first_ ? &*first_ : nullptr, policy_);
  if (!first_)
    first_ = sample;
  previous_ = std::move(sample);
  return v;
}

void printVerdict(const Verdict &verdict, llvm::raw_ostream &os) {
  os << "verdict: " << levelName(verdict.level) << "\n";
  for (const Reason &r : verdict.reasons) {
    const DiagInfo &info = diagInfo(r.code);
    os << "  " << (info.severity == Severity::Error ? "error" : "warning") << "[" << info.name << "]: " << r.message
       << "\n";
    os << "    evidence: " << r.path << ": " << r.evidence << "\n";
  }
  for (const std::string &n : verdict.notes)
    os << "  note: " << n << "\n";
}

llvm::json::Value verdictJson(const Verdict &verdict) {
  llvm::json::Array reasons, notes;
  for (const Reason &r : verdict.reasons) {
    const DiagInfo &info = diagInfo(r.code);
    reasons.push_back(llvm::json::Object{{"code", info.name},
                                         {"severity", severityName(info.severity)},
                                         {"makes", levelName(r.level)},
                                         {"message", r.message},
                                         {"path", r.path},
                                         {"evidence", r.evidence}});
  }
  for (const std::string &n : verdict.notes)
    notes.push_back(n);
  return llvm::json::Object{{"verdict", levelName(verdict.level)},
                            {"exit_status", exitStatus(verdict.level)},
                            {"reasons", std::move(reasons)},
                            {"notes", std::move(notes)}};
}

} // namespace msc::health
