// The health verdict of one node, judged purely: the sample just read, the previous one and the
// first one (health/Sample.h), and the policy's thresholds -> healthy, degraded (placeable, with
// reasons) or failed (not placeable). Every reason is a coded diagnostic with its evidence.
// Time is the samples' own (taken on an injected Clock), so the judge runs in virtual time in tests.
#pragma once

#include "hal/Render.h"
#include "health/Sample.h"
#include "support/Diagnostic.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::health {

enum class Level { Healthy, Degraded, Failed };
llvm::StringRef levelName(Level level); // "healthy", "degraded", "failed"
// The exit status of `mscale-cli hardware health`: 0 healthy, 1 degraded, 2 failed.
int exitStatus(Level level);

struct Policy {
  // Within this much of a sensor's critical limit: degraded; at or above it: failed.
  int64_t thermalWarnMarginMilliC = hal::ThermalWarnMarginMilliC;
  // An RDMA error counter growing faster than this between two samples: degraded.
  double rdmaErrorsPerMinute = 6.0;
  // Corrected memory errors growing by more than this between two samples: degraded.
  uint64_t edacCorrectedGrowth = 0;
  // A GPU's corrected ECC errors growing by more than this between two samples: degraded.
  uint64_t gpuEccCorrectedGrowth = 0;
};

struct Reason {
  DiagCode code;
  Level level;          // what it makes the node: Degraded or Failed
  std::string message;  // the table's format with its arguments
  std::string path;     // where the evidence was read ("/sys/class/thermal/thermal_zone0/temp")
  std::string evidence; // what was read there ("105000", "ACTIVE -> DOWN", a kernel log line)
};

struct Verdict {
  Level level = Level::Healthy;
  std::vector<Reason> reasons; // worst first, then in the order judged
  std::vector<std::string> notes; // what was not read or not judged, and why
  uint64_t monotonicNs = 0;       // when the judged sample was taken
};

// `previous` and `first` may be null (a single sample judges only absolute facts: temperatures,
// port states, uncorrected memory errors, NVMe critical warnings, GPU memory, GPU Xids, the kernel log).
Verdict judge(const Sample &now, const Sample *previous, const Sample *first, const Policy &policy);

// NVML delivers an Xid event once, to the look that drains it; the node stays failed (fatal Xid) or
// degraded (another) as long as the kernel log would keep the same Xid's line: until the node
// reboots. Adds `previous`'s Xids to `now`'s (counts summed, the first time kept) unless `previous`
// is from another boot (a later monotonic time). The monitor does it before each judgement, so the
// samples it keeps (and `--state` files) hold every Xid since the boot.
void carryGpuXids(Sample &now, const Sample &previous);

// A node judged continuously: keeps the first and the previous sample, carries the previous
// sample's GPU Xids into each new one.
class Monitor {
public:
  explicit Monitor(Policy policy = {}) : policy_(policy) {}
  // Judges `sample` against those before it and keeps it.
  Verdict observe(Sample sample);
  const std::optional<Sample> &first() const { return first_; }
  const std::optional<Sample> &previous() const { return previous_; }
  // Resumes from samples kept elsewhere (`hardware health --state`).
  void resume(std::optional<Sample> first, std::optional<Sample> previous) {
    first_ = std::move(first);
    previous_ = std::move(previous);
  }

private:
  Policy policy_;
  std::optional<Sample> first_, previous_;
};

// The verdict for people: its level, then each reason as "error[CODE]: message" (failed) or
// "warning[CODE]: message" (degraded) with its evidence, then the notes.
void printVerdict(const Verdict &verdict, llvm::raw_ostream &os);
llvm::json::Value verdictJson(const Verdict &verdict);

} // namespace msc::health
