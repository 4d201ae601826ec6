// The IO applier: per role, the io_uring depth the worker's reader gets (checked by the backend,
// told as MSCALE_ROLE_<ROLE>_IO_DEPTH), then the role's scheduler, weight and bandwidth limit
// (IoHost: cgroup io files and sysfs, or nothing on sim).
#include "executor/host/HostAppliers.h"

#include "executor/core/Logger.h"
#include "worker/WorkerApi.h"

namespace msc::exec {

namespace {

class IoApplier final : public Applier {
public:
  explicit IoApplier(std::unique_ptr<IoHost> host) : host_(std::move(host)) {}
  llvm::StringRef name() const override { return "io"; }

  bool apply(ApplyContext &ctx) override {
    for (const plan::IoBinding &b : ctx.plan.io_bindings()) {
      if (b.io_uring_depth()) {
        std::string note;
        if (!host_->checkRingDepth(ctx, b, note))
          return undo(ctx), false;
        std::string depth = std::to_string(b.io_uring_depth());
        ctx.worker.variables[mscale::worker::roleVariable(b.role().c_str(), "_IO_DEPTH")] = depth;
        described_.push_back("role " + b.role() + ": io_uring depth " + depth + note);
      }
      if (!host_->applySettings(ctx, b, described_))
        return undo(ctx), false;
    }
    if (ctx.injected("io")) {
      ctx.diags.report(DiagCode::ERR_EXEC_008) << "io";
      undo(ctx);
      return false;
    }
    for (const std::string &line : described_)
      ctx.log.info(ctx.contractId, "io: " + line);
    return true;
  }

  bool attach(ApplyContext &ctx, pid_t worker) override { return host_->attach(ctx, worker); }

  void rollback(ApplyContext &ctx) override {
    undo(ctx);
    ctx.log.info(ctx.contractId, "io: released");
  }

  std::vector<std::string> describe() const override { return described_; }

private:
  void undo(ApplyContext &ctx) {
    host_->release(ctx);
    described_.clear();
  }

  std::unique_ptr<IoHost> host_;
  std::vector<std::string> described_;
};

} // namespace

std::unique_ptr<Applier> createIoApplier(std::unique_ptr<IoHost> host) {
  return std::make_unique<IoApplier>(std::move(host));
}

} // namespace msc::exec
