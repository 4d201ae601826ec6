// CPU applier: the contract's cgroups (cgroup2 always, for tracing and PSI; cpuset on v2 where the
// controller is there, else the v1 cpuset hierarchy) restricted to the plan's CPUs and NUMA nodes,
// sched_setaffinity for the worker, and MSCALE_ROLE_<ROLE>_CPUS so the worker can pin each role's
// threads (worker/WorkerApi.h).
#include "executor/Appliers.h"
#include "executor/Logger.h"
#include "executor/Sys.h"
#include "executor/WorkerVariables.h"
#include "worker/WorkerApi.h"

#include "support/ContractCgroup.h"
#include "support/CpuList.h"

#include <sched.h>

namespace msc::exec {

namespace {

class CpuApplier : public Applier {
public:
  explicit CpuApplier(const ApplierOptions &o) : opts_(o) {}
  llvm::StringRef name() const override { return "cpu"; }

  bool apply(ApplyContext &ctx) override {
    PlanCpus planCpus = setCpuVariables(ctx.plan, ctx.contractId, ctx.worker);
    cpus_ = planCpus.cpus;
    std::string cpuList = formatCpuList(cpus_);
    std::string memList = formatCpuList(planCpus.mems);
    const std::vector<unsigned> &mems = planCpus.mems;

    std::string error;
    // cgroup2: always, so the tracer (mscale-trace --contract) and PSI find the contract.
    if (!opts_.cgroups.v2Mount.empty()) {
      CgroupDir d;
      if (!createCgroup(opts_.cgroups.v2Dir(ctx.contractId), false, d, error))
        return fail(ctx, opts_.cgroups.v2Dir(ctx.contractId), error);
      dirs_.push_back(d);
      ctx.worker.variables["MSCALE_CGROUP"] = d.path;
      cgroup2_ = d.path;
      described_.push_back("cgroup2 " + d.path);
    }
    if (!cpus_.empty()) {
      bool v2 = opts_.cgroups.onV2("cpuset");
      std::optional<std::string> dir = opts_.cgroups.dirFor("cpuset", ctx.contractId);
      if (!dir) {
        ctx.diags.report(DiagCode::WRN_EXEC_002)
            << "the cpuset cgroup" << "no cpuset controller is mounted (v1 or v2); only sched_setaffinity pins the worker";
      } else {
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
        if (!writeFileText(*dir + "/cpuset.cpus", cpuList, error))
          return fail(ctx, *dir + "/cpuset.cpus", error);
        if (!mems.empty() && !writeFileText(*dir + "/cpuset.mems", memList, error))
          return fail(ctx, *dir + "/cpuset.mems", error);
        described_.push_back(std::string(v2 ? "cgroup2 cpuset " : "cgroup v1 cpuset ") + *dir + ": cpus " + cpuList +
                             (mems.empty() ? "" : ", mems " + memList));
      }
    }
    if (ctx.injected("cpu")) {
      ctx.diags.report(DiagCode::ERR_EXEC_008) << "cpu";
      undo(ctx);
      return false;
    }
    for (std::string &line : describeRoleCpus(ctx.plan))
      described_.push_back(std::move(line));
    for (const std::string &line : described_)
      ctx.log.info(ctx.contractId, "cpu: " + line);
    return true;
  }

  bool attach(ApplyContext &ctx, pid_t worker) override {
    std::string error;
    for (const CgroupDir &d : dirs_)
      if (!joinCgroup(d.path, worker, error)) {
        ctx.diags.report(DiagCode::ERR_EXEC_003) << d.path << error;
        return false;
      }
    if (cpus_.empty())
      return true;
    if (int rc = mscale::worker::pinToCpus(worker, cpus_)) {
      ctx.diags.report(DiagCode::ERR_EXEC_004) << worker << formatCpuList(cpus_) << errnoText(rc);
      return false;
    }
    ctx.log.info(ctx.contractId, "cpu: worker " + std::to_string(worker) + " pinned to CPUs " +
                                     formatCpuList(cpus_));
    return true;
  }

  void rollback(ApplyContext &ctx) override {
    undo(ctx);
    ctx.log.info(ctx.contractId, "cpu: released");
  }

  std::vector<std::string> describe() const override { return described_; }
  void state(AppliedState &out) const override { out.cgroup2Dir = cgroup2_; }

private:
  bool fail(ApplyContext &ctx, const std::string &path, const std::string &error) {
    ctx.diags.report(DiagCode::ERR_EXEC_003) << path << error;
    undo(ctx);
    return false;
  }

  void undo(ApplyContext &ctx) {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
      std::string error;
      if (!removeCgroup(it->path, error))
        ctx.log.error(ctx.contractId, "cpu: " + error);
    }
    dirs_.clear();
    described_.clear();
    cgroup2_.clear();
  }

  ApplierOptions opts_;
  std::vector<unsigned> cpus_;
  std::string cgroup2_; // the contract's cgroup2 directory, once made
  std::vector<CgroupDir> dirs_;
  std::vector<std::string> described_;
};

} // namespace

std::unique_ptr<Applier> createCpuApplier(const ApplierOptions &options) { return std::make_unique<CpuApplier>(options); }

} // namespace msc::exec
