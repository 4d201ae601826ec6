#include "executor/WorkerVariables.h"

#include "interposer/cuda_counters.h"
#include "ir/FieldDefaults.h"
#include "worker/WorkerApi.h"

#include <llvm/ADT/StringRef.h>

#include <cstdlib>

namespace msc::exec {

static_assert(ir::kMaxPhases == mscale::worker::kMaxPhases, "a contract's phases must fit the control page's mask");

void setPlanVariables(const plan::Plan &plan, std::map<std::string, std::string> &variables) {
  const plan::FaultTolerance &ft = plan.fault_tolerance();
  // One directory for every rank: the ranks keep their parts apart below it (<dir>/rank-<r>).
  if (!ft.snapshot_dir().empty())
    variables["MSCALE_SNAPSHOT_DIR"] = ft.snapshot_dir();
  if (ft.snapshot_every_steps())
    variables["MSCALE_SNAPSHOT_EVERY"] = std::to_string(ft.snapshot_every_steps());
  if (ft.keep_snapshots())
    variables["MSCALE_SNAPSHOT_KEEP"] = std::to_string(ft.keep_snapshots());
  std::string phases;
  for (const plan::Phase &p : plan.lending().phases())
    phases += (phases.empty() ? "" : ",") + p.name();
  if (!phases.empty())
    variables["MSCALE_PHASES"] = phases;
}

std::map<std::string, std::string> variablesWithoutFds(const WorkerEnvironment &worker) {
  std::map<std::string, std::string> out;
  for (auto &[k, v] : worker.variables)
    if (!llvm::StringRef(k).ends_with("_FD"))
      out[k] = v;
  return out;
}

void setCudaCounterVariables(const std::string &interposerPath, const std::string &countersDir,
                             std::map<std::string, std::string> &variables) {
  std::string preload = interposerPath;
  if (const char *old = std::getenv("LD_PRELOAD"); old && *old)
    preload += std::string(":") + old;
  variables["LD_PRELOAD"] = preload;
  variables[MSC_COUNTERS_DIR_ENV] = countersDir;
  variables[MSC_COUNTERS_MODE_ENV] = "count";
}

} // namespace msc::exec
