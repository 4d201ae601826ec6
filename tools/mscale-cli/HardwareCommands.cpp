// mscale-cli hardware health: what the node has (temperatures against limits, hugepages, RDMA ports,
// NVMe, GPUs), then its health verdict (health/Judge.h) with an exit status scripts use:
// 0 healthy, 1 degraded, 2 failed.
#include "tools/mscale-cli/CommandGroup.h"

#include "hal/Render.h"
#include "health/Judge.h"
#include "health/Sampler.h"
#include "support/Clock.h"
#include "tools/common/OptionSpelling.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <thread>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand HardwareCmd("hardware", "Check a node's hardware health (health)");
cl::opt<std::string> Action(cl::Positional, cl::desc("<health>"), cl::Required, cl::sub(HardwareCmd));
cl::opt<std::string> Input("topology", cl::desc("A recorded topology (hwloc XML, YAML) or 'live'"), cl::value_desc("file"),
                           cl::sub(HardwareCmd));
cl::opt<std::string> InputOld("input", cl::desc("The older spelling of --topology"), cl::Hidden, cl::sub(HardwareCmd));
cl::opt<std::string> SysfsRoot("sysfs-root", cl::desc("Read a recorded sysfs/procfs tree instead of '/'"),
                               cl::value_desc("dir"), cl::sub(HardwareCmd));
cl::opt<std::string> NvmlLibrary("nvml-library",
                                 cl::desc("Read the GPUs' memory health (ECC, row remapping) through this NVML "
                                          "library (default: libnvidia-ml.so.1 on the live node, none under "
                                          "--sysfs-root)"),
                                 cl::value_desc("file"), cl::sub(HardwareCmd));
cl::opt<bool> Json("json", cl::desc("Write JSON for scripts"), cl::sub(HardwareCmd));
cl::opt<std::string> Interval("interval",
                              cl::desc("Take two samples this far apart and judge counter growth too (default: one "
                                       "sample, absolute facts only; at most 60s)"),
                              cl::value_desc("duration"), cl::sub(HardwareCmd));
cl::opt<std::string> StateFile("state",
                               cl::desc("Keep the first and the last sample in this file and judge against them "
                                        "(growth between runs)"),
                               cl::value_desc("file"), cl::sub(HardwareCmd));

constexpr uint64_t MaxIntervalNs = 60'000'000'000;

// --state FILE: {"first": SAMPLE, "last": SAMPLE}; absent is a first run.
bool loadState(health::Monitor &monitor, DiagnosticEngine &diags) {
  if (!llvm::sys::fs::exists(StateFile))
    return true;
  auto buf = llvm::MemoryBuffer::getFile(StateFile);
  if (!buf) {
    diags.report(DiagCode::ERR_DRV_001) << StateFile << buf.getError().message();
    return false;
  }
  auto fail = [&](std::string why) {
    diags.report(DiagCode::ERR_HEALTH_007) << StateFile << why;
    return false;
  };
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse((*buf)->getBuffer());
  if (!doc)
    return fail(llvm::toString(doc.takeError()));
  const llvm::json::Object *o = doc->getAsObject();
  if (!o || !o->get("first") || !o->get("last"))
    return fail("expected an object with 'first' and 'last'");
  llvm::Expected<health::Sample> first = health::sampleFromJson(*o->get("first"));
  if (!first)
    return fail("first: " + llvm::toString(first.takeError()));
  llvm::Expected<health::Sample> last = health::sampleFromJson(*o->get("last"));
  if (!last)
    return fail("last: " + llvm::toString(last.takeError()));
  monitor.resume(std::move(*first), std::move(*last));
  return true;
}

bool saveState(const health::Monitor &monitor, DiagnosticEngine &diags) {
  llvm::json::Object state{{"first", health::sampleToJson(*monitor.first())},
                           {"last", health::sampleToJson(*monitor.previous())}};
  llvm::Error e = llvm::writeToOutput(StateFile, [&](llvm::raw_ostream &os) {
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(state))) << "\n";
    return llvm::Error::success();
  });
  if (e) {
    diags.report(DiagCode::ERR_DRV_004) << StateFile << llvm::toString(std::move(e));
    return false;
  }
  return true;
}

int run() {
  cli::Diagnostics diagnostics;
  DiagnosticEngine &diags = diagnostics.engine();
  if (Action != "health") {
    diags.report(DiagCode::ERR_DRV_005) << ("unknown hardware action '" + Action + "' (expected health)");
    return 2;
  }
  tools::takeOldSpelling(Input, InputOld, diags);
  uint64_t intervalNs = 0;
  if (Interval.getNumOccurrences()) {
    std::optional<uint64_t> ns = tools::durationOption("--interval", Interval, diags);
    if (!ns)
      return 2;
    if (*ns > MaxIntervalNs) {
      diags.report(DiagCode::ERR_DRV_005) << ("--interval " + Interval + " is longer than 60s");
      return 2;
    }
    intervalNs = *ns;
  }
  auto topo = cli::loadTopologyFromOptions(Input, SysfsRoot, "", diags);
  if (!topo)
    return 1;

  // A recorded topology file has no values to re-read: its inventory is shown, no verdict.
  bool judged = !SysfsRoot.empty() || Input.empty() || Input == "live";
  std::optional<health::Verdict> verdict;
  if (judged) {
    health::SamplerOptions options;
    options.root = SysfsRoot.empty() ? "/" : SysfsRoot.getValue();
    if (!NvmlLibrary.empty())
      options.nvmlLibrary = NvmlLibrary.getValue();
    const Clock &clock = SystemClock::instance();
    health::Monitor monitor;
    if (!StateFile.empty() && !loadState(monitor, diags))
      return 2;
    verdict = monitor.observe(health::takeSample(*topo, options, clock));
    if (intervalNs) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(intervalNs));
      verdict = monitor.observe(health::takeSample(*topo, options, clock));
    }
    if (!StateFile.empty() && !saveState(monitor, diags))
      return 2;
  }

  if (Json) {
    llvm::json::Value out = hal::healthJson(*topo);
    if (verdict)
      (*out.getAsObject())["health"] = health::verdictJson(*verdict);
    llvm::outs() << llvm::formatv("{0:2}", out) << "\n";
  } else {
    hal::printHealth(*topo, llvm::outs());
    if (verdict)
      health::printVerdict(*verdict, llvm::outs());
    else
      llvm::outs() << "verdict: not judged (a recorded topology file holds no values to re-read; use "
                      "--sysfs-root DIR or the live node)\n";
  }
  return verdict ? health::exitStatus(verdict->level) : 0;
}

cli::Registration registration(HardwareCmd, run);

} // namespace
