// The CPU applier: the plan's CPUs and NUMA nodes, all roles together, are what the contract is
// confined to (CpuHost: cgroups and affinity, or nothing on sim); each role's own CPUs go to the
// worker as MSCALE_ROLE_<ROLE>_CPUS so it can pin that role's threads (worker/WorkerApi.h).
#include "executor/host/HostAppliers.h"

#include "executor/core/Logger.h"
#include "support/CpuList.h"
#include "worker/WorkerApi.h"

#include <llvm/ADT/StringExtras.h>

#include <set>

namespace msc::exec {

namespace {

class CpuApplier final : public Applier {
public:
  explicit CpuApplier(std::unique_ptr<CpuHost> host) : host_(std::move(host)) {}
  llvm::StringRef name() const override { return "cpu"; }

  bool apply(ApplyContext &ctx) override {
    CpuRequest request = requestOf(ctx.plan);
    setVariables(ctx, request);
    cpus_ = request.cpus;
    if (!host_->confine(ctx, request, described_))
      return undo(ctx), false;
    if (std::string dir = host_->cgroup2Dir(); !dir.empty())
      ctx.worker.variables["MSCALE_CGROUP"] = dir;
    if (ctx.injected("cpu")) {
      ctx.diags.report(DiagCode::ERR_EXEC_008) << "cpu";
      undo(ctx);
      return false;
    }
    for (const plan::IoBinding &b : ctx.plan.io_bindings())
      if (!b.cpus().empty())
        described_.push_back("role " + b.role() + ": CPUs " +
                             formatCpuList(std::vector<unsigned>(b.cpus().begin(), b.cpus().end())));
    for (const std::string &line : described_)
      ctx.log.info(ctx.contractId, "cpu: " + line);
    return true;
  }

  bool attach(ApplyContext &ctx, pid_t worker) override { return host_->attach(ctx, worker, cpus_); }

  void rollback(ApplyContext &ctx) override {
    undo(ctx);
    ctx.log.info(ctx.contractId, "cpu: released");
  }

  std::vector<std::string> describe() const override { return described_; }
  void state(AppliedState &out) const override { out.cgroup2Dir = host_->cgroup2Dir(); }

private:
  static CpuRequest requestOf(const plan::Plan &plan) {
    std::set<unsigned> cpus, mems;
    for (const plan::IoBinding &b : plan.io_bindings()) {
      cpus.insert(b.cpus().begin(), b.cpus().end());
      if (b.numa_node() >= 0)
        mems.insert(static_cast<unsigned>(b.numa_node()));
    }
    CpuRequest request;
    request.cpus.assign(cpus.begin(), cpus.end());
    request.mems.assign(mems.begin(), mems.end());
    request.weight = plan.cpu_weight();
    return request;
  }

  static void setVariables(ApplyContext &ctx, const CpuRequest &request) {
    std::vector<std::string> roles;
    for (const plan::IoBinding &b : ctx.plan.io_bindings())
      if (!b.cpus().empty()) {
        std::vector<unsigned> roleCpus(b.cpus().begin(), b.cpus().end());
        ctx.worker.variables[mscale::worker::roleVariable(b.role().c_str(), "_CPUS")] = formatCpuList(roleCpus);
        roles.push_back(b.role());
      }
    ctx.worker.variables["MSCALE_CONTRACT"] = ctx.contractId;
    ctx.worker.variables["MSCALE_ROLES"] = llvm::join(roles, ",");
    if (!request.cpus.empty())
      ctx.worker.variables["MSCALE_CPUS"] = formatCpuList(request.cpus);
  }

  void undo(ApplyContext &ctx) {
    host_->release(ctx);
    described_.clear();
  }

  std::unique_ptr<CpuHost> host_;
  std::vector<unsigned> cpus_;
  std::vector<std::string> described_;
};

} // namespace

std::unique_ptr<Applier> createCpuApplier(std::unique_ptr<CpuHost> host) {
  return std::make_unique<CpuApplier>(std::move(host));
}

} // namespace msc::exec
