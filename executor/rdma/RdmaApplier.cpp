// The RDMA applier (see RdmaApplier.h).
#include "executor/rdma/RdmaApplier.h"

#include <algorithm>

namespace msc::exec {
namespace {

class RdmaApplier final : public Applier {
public:
  RdmaApplier(RdmaBackend &backend, LogSink log) : backend_(backend), log_(std::move(log)) {}

  llvm::StringRef name() const override { return "rdma"; }

  bool apply(ApplyContext &ctx) override {
    const auto &settings = ctx.plan.rdma();
    say(ctx, "backend '" + backend_.name().str() + "'" +
                 (backend_.name() == "sim" ? " (simulated ports, no device is touched)" : "") + ", " +
                 std::to_string(settings.size()) + " setting(s)");
    bool inject = ctx.injected("rdma");
    int failAt = inject ? std::max(0, std::min(1, settings.size() - 1)) : -1;
    for (int i = 0; i < settings.size(); ++i) {
      const plan::RdmaSetting &s = settings[i];
      if (i == failAt) {
        ctx.diags.report(DiagCode::ERR_RDMA_004) << i;
        undo(ctx);
        return false;
      }
      unsigned port = s.port() ? s.port() : 1;
      std::string error;
      auto id = backend_.createQueuePairs(s, error);
      if (!id) {
        ctx.diags.report(DiagCode::ERR_RDMA_003) << std::max(1u, s.queue_pairs()) << s.role() << s.device() << port
                                                 << backend_.name() << error;
        undo(ctx);
        return false;
      }
      applied_.push_back({i, s.role(), *id, s.device(), port});
      if (!backend_.portActive(*id)) {
        if (!backend_.failover(*id, error)) {
          ctx.diags.report(DiagCode::ERR_RDMA_005) << s.device() << port << s.role() << error;
          undo(ctx);
          return false;
        }
        std::string device = s.failover_device().empty() ? s.device() : s.failover_device();
        unsigned fport = s.failover_port() ? s.failover_port() : 1;
        ctx.diags.report(DiagCode::WRN_RDMA_001) << s.device() << port << s.role() << device << fport;
        applied_.back().device = device;
        applied_.back().port = fport;
      }
      say(ctx, "role '" + s.role() + "' " + std::to_string(std::max(1u, s.queue_pairs())) + " QP(s) on '" +
                   applied_.back().device + "' port " + std::to_string(applied_.back().port) + " -> " +
                   backend_.name().str() + " group " + std::to_string(*id));
    }
    if (inject && settings.empty()) {
      ctx.diags.report(DiagCode::ERR_RDMA_004) << 0;
      return false;
    }
    fillEnvironment(ctx);
    return true;
  }

  // What is bound now, and by which backend (`contract status`): after a failover too.
  std::vector<std::string> describe() const override {
    std::vector<std::string> lines;
    for (const AppliedQpGroup &a : applied_)
      lines.push_back("role '" + a.role + "': '" + a.device + "' port " + std::to_string(a.port) + " -> " +
                      backend_.name().str() + " group " + std::to_string(a.id) +
                      (backend_.name() == "sim" ? " (simulated: no device is touched)" : ""));
    return lines;
  }

  // Moves every group whose port went down to its failover port (a group already there stays).
  bool failOverDownPorts(ApplyContext &ctx, std::vector<std::string> &moved, std::string &error) {
    // Every group that must move needs somewhere to go before any of them moves.
    std::vector<size_t> down;
    for (size_t i = 0; i < applied_.size(); ++i) {
      AppliedQpGroup &a = applied_[i];
      if (backend_.portActive(a.id))
        continue;
      const plan::RdmaSetting &s = ctx.plan.rdma(a.planIndex);
      if (s.failover_device().empty() && !s.failover_port()) {
        error = "role '" + a.role + "' on '" + a.device + "' port " + std::to_string(a.port) +
                ": the plan names no failover port";
        return false;
      }
      std::string device = s.failover_device().empty() ? s.device() : s.failover_device();
      unsigned fport = s.failover_port() ? s.failover_port() : 1;
      if (a.device == device && a.port == fport) {
        error = "role '" + a.role + "': the failover port '" + device + "' port " + std::to_string(fport) +
                " is down too";
        return false;
      }
      down.push_back(i);
    }
    bool ok = true;
    for (size_t i : down) {
      AppliedQpGroup &a = applied_[i];
      const plan::RdmaSetting &s = ctx.plan.rdma(a.planIndex);
      std::string why;
      if (!backend_.failover(a.id, why)) { // e.g. the failover port is down as well
        error = "role '" + a.role + "': " + why;
        ok = false;
        break;
      }
      std::string device = s.failover_device().empty() ? s.device() : s.failover_device();
      unsigned fport = s.failover_port() ? s.failover_port() : 1;
      moved.push_back("role '" + a.role + "': '" + a.device + "' port " + std::to_string(a.port) + " -> '" + device +
                      "' port " + std::to_string(fport));
      a.device = device;
      a.port = fport;
    }
    fillEnvironment(ctx); // what moved is where the worker must look, also when a later group failed
    return ok;
  }

  void rollback(ApplyContext &ctx) override { undo(ctx); }

  const std::vector<AppliedQpGroup> &groups() const { return applied_; }

private:
  void say(ApplyContext &ctx, const std::string &line) {
    if (log_)
      log_(line); // the sink (the agent's Logger) adds the contract id and the applier's name
  }

  void fillEnvironment(ApplyContext &ctx) {
    if (applied_.empty())
      return;
    std::string spec;
    for (const AppliedQpGroup &a : applied_) {
      const plan::RdmaSetting &s = ctx.plan.rdma(a.planIndex);
      spec += (spec.empty() ? "" : ";") + a.role + "@" + a.device + ":" + std::to_string(a.port) + ":" +
              std::to_string(std::max(1u, s.queue_pairs())) + ":" + std::to_string(s.max_outstanding());
    }
    setEnv(ctx, "MSCALE_RDMA_BACKEND", backend_.name().str());
    setEnv(ctx, "MSCALE_RDMA", spec);
  }

  void setEnv(ApplyContext &ctx, const std::string &key, const std::string &value) {
    ctx.worker.variables[key] = value;
    if (std::find(envKeys_.begin(), envKeys_.end(), key) == envKeys_.end())
      envKeys_.push_back(key);
  }

  void undo(ApplyContext &ctx) {
    for (auto it = applied_.rbegin(); it != applied_.rend(); ++it) {
      backend_.destroyQueuePairs(it->id);
      say(ctx, "destroyed " + backend_.name().str() + " group " + std::to_string(it->id));
    }
    applied_.clear();
    for (const std::string &key : envKeys_)
      ctx.worker.variables.erase(key);
    envKeys_.clear();
  }

  RdmaBackend &backend_;
  LogSink log_;
  std::vector<AppliedQpGroup> applied_;
  std::vector<std::string> envKeys_;
};

} // namespace

std::unique_ptr<Applier> createRdmaApplier(RdmaBackend &backend, LogSink log) {
  return std::make_unique<RdmaApplier>(backend, std::move(log));
}

bool failOverDownPorts(Applier &applier, ApplyContext &ctx, std::vector<std::string> &moved, std::string &error) {
  auto *rdma = dynamic_cast<RdmaApplier *>(&applier);
  if (!rdma) {
    error = "not the RDMA applier";
    return false;
  }
  return rdma->failOverDownPorts(ctx, moved, error);
}

const std::vector<AppliedQpGroup> *appliedQpGroups(const Applier &applier) {
  auto *rdma = dynamic_cast<const RdmaApplier *>(&applier);
  return rdma ? &rdma->groups() : nullptr;
}

} // namespace msc::exec
