#include "executor/WorkerVariables.h"

#include "interposer/cuda_counters.h"

#include <llvm/ADT/StringRef.h>

#include <cstdlib>

namespace msc::exec {

void setSnapshotVariables(const plan::FaultTolerance &ft, std::map<std::string, std::string> &variables) {
  // One directory for every rank: the ranks keep their parts apart below it (<dir>/rank-<r>).
  if (!ft.snapshot_dir().empty())
    variables["MSCALE_SNAPSHOT_DIR"] = ft.snapshot_dir();
  if (ft.snapshot_every_steps())
    variables["MSCALE_SNAPSHOT_EVERY"] = std::to_string(ft.snapshot_every_steps());
  if (ft.keep_snapshots())
    variables["MSCALE_SNAPSHOT_KEEP"] = std::to_string(ft.keep_snapshots());
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
