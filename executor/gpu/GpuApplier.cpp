// The GPU applier (see GpuApplier.h): all slices or none.
#include "executor/gpu/GpuApplier.h"

#include "executor/gpu/SliceMath.h"

#include <algorithm>
#include <map>

namespace msc::exec {
namespace {

class GpuApplier final : public Applier {
public:
  GpuApplier(GpuBackend &backend, LogSink log) : backend_(backend), log_(std::move(log)) {}

  llvm::StringRef name() const override { return "gpu"; }

  bool apply(ApplyContext &ctx) override {
    const auto &slices = ctx.plan.gpu_slices();
    say(ctx, "backend '" + backend_.name().str() + "'" +
                 (backend_.name() == "sim" ? " (simulated GPUs, no device is touched)" : "") + ", " +
                 std::to_string(slices.size()) + " slice(s)");
    // The injected failure comes after the first slice, so the roll-back has something to undo.
    bool inject = ctx.injected("gpu");
    int failAt = inject ? std::max(0, std::min(1, slices.size() - 1)) : -1;
    for (int i = 0; i < slices.size(); ++i) {
      const plan::GpuSlice &s = slices[i];
      if (i == failAt) {
        ctx.diags.report(DiagCode::ERR_GPU_004) << i;
        undo(ctx);
        return false;
      }
      std::string error;
      auto id = backend_.createSlice(s, error);
      if (!id) {
        ctx.diags.report(DiagCode::ERR_GPU_003)
            << i << s.role() << (s.pci_address().empty() ? std::to_string(s.gpu_index()) : s.pci_address())
            << backend_.name() << error;
        undo(ctx);
        return false;
      }
      applied_.push_back({i, s.role(), s.gpu_index(), *id});
      say(ctx, "slice " + std::to_string(i) + " role '" + s.role() + "' on gpu " + std::to_string(s.gpu_index()) +
                   " -> " + backend_.name().str() + " slice " + std::to_string(*id));
    }
    if (inject && slices.empty()) {
      ctx.diags.report(DiagCode::ERR_GPU_004) << 0;
      return false;
    }
    fillEnvironment(ctx);
    return true;
  }

  void rollback(ApplyContext &ctx) override { undo(ctx); }

  const std::vector<AppliedSlice> &slices() const { return applied_; }

private:
  void say(ApplyContext &ctx, const std::string &line) {
    if (log_)
      log_(line); // the sink (the agent's Logger) adds the contract id and the applier's name
  }

  void undo(ApplyContext &ctx) {
    for (auto it = applied_.rbegin(); it != applied_.rend(); ++it) {
      backend_.destroySlice(it->id);
      say(ctx, "destroyed " + backend_.name().str() + " slice " + std::to_string(it->id));
    }
    applied_.clear();
    for (const std::string &key : envKeys_)
      ctx.worker.variables.erase(key);
    envKeys_.clear();
  }

  void setEnv(ApplyContext &ctx, const std::string &key, const std::string &value) {
    ctx.worker.variables[key] = value;
    if (std::find(envKeys_.begin(), envKeys_.end(), key) == envKeys_.end())
      envKeys_.push_back(key);
  }

  void fillEnvironment(ApplyContext &ctx) {
    if (applied_.empty())
      return;
    std::vector<std::string> visible;
    std::string specs, ids, mpsLimits;
    unsigned mpsPercent = 0;
    for (const AppliedSlice &a : applied_) {
      const plan::GpuSlice &s = ctx.plan.gpu_slices(a.planIndex);
      std::string dev = visibleDevice(s);
      auto pos = std::find(visible.begin(), visible.end(), dev);
      size_t ordinal = pos - visible.begin();
      if (pos == visible.end())
        visible.push_back(dev);
      unsigned sms = s.sm_count();
      if (auto sample = backend_.sample(a.id))
        sms = sample->sms;
      for (auto &[key, value] : backend_.workerEnvironment(a.id)) {
        if (key == "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") {
          unsigned p = unsigned(std::stoul(value));
          mpsPercent = std::max(mpsPercent, p);
          if (s.mechanism() != plan::GpuSlice::MPS)
            ctx.diags.report(DiagCode::WRN_GPU_001)
                << (s.pci_address().empty() ? std::to_string(s.gpu_index()) : s.pci_address()) << s.role() << p;
          if (s.memory_limit_bytes())
            mpsLimits += (mpsLimits.empty() ? "" : ",") + std::to_string(ordinal) + "=" +
                         std::to_string(std::max<uint64_t>(1, s.memory_limit_bytes() >> 20)) + "M";
        } else {
          setEnv(ctx, key, value);
        }
      }
      specs += (specs.empty() ? "" : ";") + s.role() + "@" + std::to_string(ordinal) + ":" + std::to_string(sms) +
               ":" + std::to_string(s.memory_limit_bytes()) + ":" + std::to_string(s.stream_priority());
      ids += (ids.empty() ? "" : ",") + std::to_string(a.id);
    }
    std::string list;
    for (const std::string &v : visible)
      list += (list.empty() ? "" : ",") + v;
    setEnv(ctx, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    setEnv(ctx, "CUDA_VISIBLE_DEVICES", list);
    setEnv(ctx, "MSCALE_GPU_BACKEND", backend_.name().str());
    setEnv(ctx, "MSCALE_GPU_SLICES", specs);
    setEnv(ctx, "MSCALE_GPU_SLICE_IDS", ids);
    if (mpsPercent) {
      setEnv(ctx, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(mpsPercent));
      if (!mpsLimits.empty())
        setEnv(ctx, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", mpsLimits);
    }
    say(ctx, "worker sees CUDA_VISIBLE_DEVICES=" + list + " MSCALE_GPU_SLICES=" + specs);
  }

  GpuBackend &backend_;
  LogSink log_;
  std::vector<AppliedSlice> applied_;
  std::vector<std::string> envKeys_;
};

} // namespace

std::unique_ptr<Applier> createGpuApplier(GpuBackend &backend, LogSink log) {
  return std::make_unique<GpuApplier>(backend, std::move(log));
}

const std::vector<AppliedSlice> *appliedGpuSlices(const Applier &applier) {
  auto *gpu = dynamic_cast<const GpuApplier *>(&applier);
  return gpu ? &gpu->slices() : nullptr;
}

} // namespace msc::exec
