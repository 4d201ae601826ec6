// host_backend real, CPU: the contract's cgroups (cgroup2 always, for tracing and PSI; cpuset on v2
// where the controller is there, else the v1 cpuset hierarchy) restricted to the plan's CPUs and
// NUMA nodes, the contract's cpu weight (cgroup2 cpu.weight, else v1 cpu.shares), and
// sched_setaffinity for the worker.
#include "executor/host/Backends.h"

#include "executor/core/Logger.h"
#include "executor/host/Sys.h"
#include "support/ContractCgroup.h"
#include "support/CpuList.h"
#include "worker/WorkerApi.h"

#include <algorithm>

namespace msc::exec {

namespace {

class RealCpuHost final : public CpuHost {
public:
  explicit RealCpuHost(const ApplierOptions &o) : opts_(o) {}

  bool confine(ApplyContext &ctx, const CpuRequest &request, std::vector<std::string> &lines) override {
    std::string error;
    // cgroup2: always, so the tracer (mscale-trace --contract) and PSI find the contract.
    if (!opts_.cgroups.v2Mount.empty()) {
      CgroupDir d;
      if (!createCgroup(opts_.cgroups.v2Dir(ctx.contractId), false, d, error))
        return fail(ctx, opts_.cgroups.v2Dir(ctx.contractId), error);
      dirs_.push_back(d);
      cgroup2_ = d.path;
      lines.push_back("cgroup2 " + d.path);
    }
    if (!request.cpus.empty() && !confineCpuset(ctx, request, lines))
      return false;
    return request.weight == 0 || weigh(ctx, request.weight, lines);
  }

  bool attach(ApplyContext &ctx, pid_t worker, const std::vector<unsigned> &cpus) override {
    std::string error;
    for (const CgroupDir &d : dirs_)
      if (!joinCgroup(d.path, worker, error)) {
        ctx.diags.report(DiagCode::ERR_EXEC_003) << d.path << error;
        return false;
      }
    if (cpus.empty())
      return true;
    if (int rc = mscale::worker::pinToCpus(worker, cpus)) {
      ctx.diags.report(DiagCode::ERR_EXEC_004) << worker << formatCpuList(cpus) << errnoText(rc);
      return false;
    }
    ctx.log.info(ctx.contractId, "cpu: worker " + std::to_string(worker) + " pinned to CPUs " + formatCpuList(cpus));
    return true;
  }

  void release(ApplyContext &ctx) override {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
      std::string error;
      if (!removeCgroup(it->path, error))
        ctx.log.error(ctx.contractId, "cpu: " + error);
    }
    dirs_.clear();
    cgroup2_.clear();
  }

  std::string cgroup2Dir() const override { return cgroup2_; }

private:
  bool confineCpuset(ApplyContext &ctx, const CpuRequest &request, std::vector<std::string> &lines) {
    std::string error;
    bool v2 = opts_.cgroups.onV2("cpuset");
    std::optional<std::string> dir = opts_.cgroups.dirFor("cpuset", ctx.contractId);
    if (!dir) {
      ctx.diags.report(DiagCode::WRN_EXEC_002)
          << "the cpuset cgroup" << "no cpuset controller is mounted (v1 or v2); only sched_setaffinity pins the worker";
      return true;
    }
    CgroupDir d;
    if (v2) {
      std::string parent = opts_.cgroups.v2Mount;
      // Enable cpuset for mscale/ and mscale/<ID> (already there when another contract runs).
      writeFileText(parent + "/cgroup.subtree_control", "+cpuset", error);
      if (dirs_.empty() || dirs_.back().path != *dir) {
        if (!createCgroup(*dir, false, d, error))
          return fail(ctx, *dir, error);
        dirs_.push_back(d);
      }
      std::string control = contractCgroupParent(parent) + "/cgroup.subtree_control";
      if (!writeFileText(control, "+cpuset", error))
        return fail(ctx, control, error);
    } else {
      if (!createCgroup(*dir, true, d, error))
        return fail(ctx, *dir, error);
      dirs_.push_back(d);
    }
    std::string cpuList = formatCpuList(request.cpus), memList = formatCpuList(request.mems);
    if (!writeFileText(*dir + "/cpuset.cpus", cpuList, error))
      return fail(ctx, *dir + "/cpuset.cpus", error);
    if (!request.mems.empty() && !writeFileText(*dir + "/cpuset.mems", memList, error))
      return fail(ctx, *dir + "/cpuset.mems", error);
    lines.push_back(std::string(v2 ? "cgroup2 cpuset " : "cgroup v1 cpuset ") + *dir + ": cpus " + cpuList +
                    (request.mems.empty() ? "" : ", mems " + memList));
    return true;
  }

  // cpu_weight: cgroup2 cpu.weight (1..10000, 100 the default), else v1 cpu.shares on its scale
  // (1024 the default). What the node cannot do is a WRN_EXEC_002, as for an io weight.
  bool weigh(ApplyContext &ctx, unsigned weight, std::vector<std::string> &lines) {
    std::string setting = "cpu_weight " + std::to_string(weight), error;
    std::optional<std::string> dir = opts_.cgroups.dirFor("cpu", ctx.contractId);
    if (!dir) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << "no cpu controller is mounted (v1 or v2)";
      return true;
    }
    bool v2 = opts_.cgroups.onV2("cpu");
    if (v2) {
      writeFileText(opts_.cgroups.v2Mount + "/cgroup.subtree_control", "+cpu", error);
      std::string control = contractCgroupParent(opts_.cgroups.v2Mount) + "/cgroup.subtree_control";
      if (!writeFileText(control, "+cpu", error))
        return fail(ctx, control, error);
    } else if (!holds(*dir)) {
      CgroupDir d;
      if (!createCgroup(*dir, false, d, error))
        return fail(ctx, *dir, error);
      dirs_.push_back(d);
    }
    std::string file = *dir + (v2 ? "/cpu.weight" : "/cpu.shares");
    uint64_t value = v2 ? weight : std::clamp<uint64_t>(uint64_t{weight} * 1024 / 100, 2, 262144);
    if (!writeFileText(file, std::to_string(value), error)) {
      ctx.diags.report(DiagCode::WRN_EXEC_002) << setting << (file + ": " + error);
      return true;
    }
    lines.push_back(v2 ? "cgroup2 cpu.weight " + std::to_string(value) + " (" + *dir + ")"
                       : "cgroup v1 cpu.shares " + std::to_string(value) + " for cpu_weight " + std::to_string(weight) +
                             " (" + *dir + ")");
    return true;
  }

  bool holds(const std::string &path) const {
    return std::any_of(dirs_.begin(), dirs_.end(), [&](const CgroupDir &d) { return d.path == path; });
  }

  bool fail(ApplyContext &ctx, const std::string &path, const std::string &error) {
    ctx.diags.report(DiagCode::ERR_EXEC_003) << path << error;
    release(ctx);
    return false;
  }

  ApplierOptions opts_;
  std::string cgroup2_; // the contract's cgroup2 directory, once made
  std::vector<CgroupDir> dirs_;
};

} // namespace

std::unique_ptr<CpuHost> createRealCpuHost(const ApplierOptions &options) {
  return std::make_unique<RealCpuHost>(options);
}

} // namespace msc::exec
