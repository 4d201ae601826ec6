#include "executor/WorkerVariables.h"

#include "interposer/cuda_counters.h"
#include "support/CpuList.h"
#include "worker/WorkerApi.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unistd.h>

namespace msc::exec {

PlanCpus setCpuVariables(const plan::Plan &plan, const std::string &contract, WorkerEnvironment &worker) {
  std::set<unsigned> cpus, mems;
  std::vector<std::string> roles;
  for (const plan::IoBinding &b : plan.io_bindings()) {
    cpus.insert(b.cpus().begin(), b.cpus().end());
    if (b.numa_node() >= 0)
      mems.insert(static_cast<unsigned>(b.numa_node()));
    if (!b.cpus().empty()) {
      std::vector<unsigned> roleCpus(b.cpus().begin(), b.cpus().end());
      worker.variables[mscale::worker::roleVariable(b.role().c_str(), "_CPUS")] = formatCpuList(roleCpus);
      roles.push_back(b.role());
    }
  }
  PlanCpus out{{cpus.begin(), cpus.end()}, {mems.begin(), mems.end()}};
  worker.variables["MSCALE_CONTRACT"] = contract;
  worker.variables["MSCALE_ROLES"] = llvm::join(roles, ",");
  if (!out.cpus.empty())
    worker.variables["MSCALE_CPUS"] = formatCpuList(out.cpus);
  return out;
}

std::vector<std::string> describeRoleCpus(const plan::Plan &plan) {
  std::vector<std::string> out;
  for (const plan::IoBinding &b : plan.io_bindings())
    if (!b.cpus().empty())
      out.push_back("role " + b.role() + ": CPUs " +
                    formatCpuList(std::vector<unsigned>(b.cpus().begin(), b.cpus().end())));
  return out;
}

std::string setIoDepthVariable(const plan::IoBinding &binding, WorkerEnvironment &worker) {
  if (!binding.io_uring_depth())
    return "";
  std::string depth = std::to_string(binding.io_uring_depth());
  worker.variables[mscale::worker::roleVariable(binding.role().c_str(), "_IO_DEPTH")] = depth;
  return "role " + binding.role() + ": io_uring depth " + depth;
}

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

std::string poolName(const std::string &contract, const std::string &role) {
  return "mscale-pool-" + contract + "-" + role;
}

void handPoolToWorker(const std::string &role, int fd, uint64_t bytes, uint64_t pageSize, WorkerEnvironment &worker) {
  worker.variables[mscale::worker::roleVariable(role.c_str(), "POOL_FD")] = std::to_string(fd);
  worker.variables[mscale::worker::roleVariable(role.c_str(), "POOL_BYTES")] = std::to_string(bytes);
  worker.variables[mscale::worker::roleVariable(role.c_str(), "POOL_PAGE_SIZE")] = std::to_string(pageSize);
  worker.inheritedFds.push_back(fd);
}

void closePool(int fd, WorkerEnvironment &worker) {
  ::close(fd);
  std::erase(worker.inheritedFds, fd);
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
