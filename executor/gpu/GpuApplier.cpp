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
      madeFrom_.push_back(s);
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
  void state(AppliedState &out) const override { out.gpuSlices = specs_; }
  // What is bound now, and by which backend (`contract status`): after hand-overs and moves too.
  std::vector<std::string> describe() const override {
    std::vector<std::string> lines;
    for (const AppliedSlice &a : applied_)
      lines.push_back("role '" + a.role + "': " + backend_.name().str() + " slice " + std::to_string(a.id) +
                      " on gpu " + std::to_string(a.gpuIndex) +
                      (backend_.name() == "sim" ? " (simulated: no device is touched)" : ""));
    return lines;
  }

  const std::vector<AppliedSlice> &slices() const { return applied_; }

  // Hand-over to ctx.plan: each entry whose GPU, size or limits changed gets its new slice created
  // while the old one still runs; only when all exist are they swapped in. The old ones are
  // returned in `retiring`, still alive, for retire() once the worker has moved.
  bool replace(ApplyContext &ctx, std::vector<SliceId> &retiring, std::vector<std::string> &changes,
               std::string &error) {
    const auto &next = ctx.plan.gpu_slices();
    if (next.size() != static_cast<int>(applied_.size())) {
      error = "the new plan has " + std::to_string(next.size()) + " GPU slice entries, " +
              std::to_string(applied_.size()) + " are held";
      return false;
    }
    std::vector<std::pair<size_t, SliceId>> created;
    std::vector<std::pair<size_t, unsigned>> resizedInPlace; // entry, SMs before
    auto undo = [&] {
      for (auto &[index, id] : created)
        backend_.destroySlice(id);
      for (auto &[index, sms] : resizedInPlace) {
        std::string ignored;
        backend_.resizeSlice(applied_[index].id, sms, ignored);
      }
    };
    for (size_t i = 0; i < applied_.size(); ++i) {
      const plan::GpuSlice &was = madeFrom_[i], &now = next[static_cast<int>(i)];
      if (sameSlice(was, now))
        continue;
      std::string why;
      if (auto id = backend_.createSlice(now, why)) {
        created.push_back({i, *id});
        continue;
      }
      // No room for both at once: on the same GPU the backend can hand over within the slice's own
      // SMs (the cuda backend builds the new green context from them before the old one goes).
      std::string inPlace;
      bool sameGpu = was.gpu_index() == now.gpu_index() && was.pci_address() == now.pci_address();
      unsigned before = was.sm_count();
      if (sameGpu && now.sm_count() && backend_.resizeSlice(applied_[i].id, now.sm_count(), inPlace)) {
        resizedInPlace.push_back({i, before});
        continue;
      }
      error = "slice " + std::to_string(i) + " role '" + now.role() + "' on gpu " + std::to_string(now.gpu_index()) +
              ": " + why + (inPlace.empty() ? "" : "; in place: " + inPlace);
      undo();
      return false;
    }
    for (auto &[i, sms] : resizedInPlace) {
      const plan::GpuSlice &now = next[static_cast<int>(i)];
      changes.push_back("slice " + std::to_string(i) + " role '" + now.role() + "': " + backend_.name().str() +
                        " slice " + std::to_string(applied_[i].id) + " resized in place on gpu " +
                        std::to_string(now.gpu_index()) + ", " + std::to_string(madeFrom_[i].slices()) + " -> " +
                        std::to_string(now.slices()) + " slices (no room for both at once)");
      madeFrom_[i] = now;
    }
    for (auto &[i, id] : created) {
      const plan::GpuSlice &now = next[static_cast<int>(i)];
      changes.push_back("slice " + std::to_string(i) + " role '" + now.role() + "': " + backend_.name().str() +
                        " slice " + std::to_string(applied_[i].id) + " (gpu " + std::to_string(applied_[i].gpuIndex) +
                        ", " + std::to_string(madeFrom_[i].slices()) + " slices) -> " + std::to_string(id) +
                        " (gpu " + std::to_string(now.gpu_index()) + ", " + std::to_string(now.slices()) + " slices)");
      retiring.push_back(applied_[i].id);
      applied_[i] = {static_cast<int>(i), now.role(), now.gpu_index(), id};
      madeFrom_[i] = now;
    }
    fillEnvironment(ctx);
    return true;
  }

  void retire(const std::vector<SliceId> &ids) {
    for (SliceId id : ids)
      backend_.destroySlice(id);
  }

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
    madeFrom_.clear();
    for (const std::string &key : envKeys_)
      ctx.worker.variables.erase(key);
    envKeys_.clear();
    specs_.clear();
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
    specs_ = specs;
    setEnv(ctx, "MSCALE_GPU_SLICE_IDS", ids);
    if (mpsPercent) {
      setEnv(ctx, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(mpsPercent));
      if (!mpsLimits.empty())
        setEnv(ctx, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", mpsLimits);
    }
    say(ctx, "worker sees CUDA_VISIBLE_DEVICES=" + list + " MSCALE_GPU_SLICES=" + specs);
  }

  static bool sameSlice(const plan::GpuSlice &a, const plan::GpuSlice &b) {
    return a.gpu_index() == b.gpu_index() && a.pci_address() == b.pci_address() && a.uuid() == b.uuid() &&
           a.slices() == b.slices() && a.sm_count() == b.sm_count() &&
           a.memory_limit_bytes() == b.memory_limit_bytes() && a.mechanism() == b.mechanism() &&
           a.stream_priority() == b.stream_priority();
  }

  GpuBackend &backend_;
  LogSink log_;
  std::vector<AppliedSlice> applied_;
  std::vector<plan::GpuSlice> madeFrom_; // the plan entry each held slice was created from
  std::vector<std::string> envKeys_;
  std::string specs_; // what the worker is told of its slices (MSCALE_GPU_SLICES), after apply or a hand-over
};

} // namespace

std::unique_ptr<Applier> createGpuApplier(GpuBackend &backend, LogSink log) {
  return std::make_unique<GpuApplier>(backend, std::move(log));
}

bool replaceGpuSlices(Applier &applier, ApplyContext &ctx, std::vector<SliceId> &retiring,
                      std::vector<std::string> &changes, std::string &error) {
  auto *gpu = dynamic_cast<GpuApplier *>(&applier);
  if (!gpu) {
    error = "not the GPU applier";
    return false;
  }
  return gpu->replace(ctx, retiring, changes, error);
}

void retireGpuSlices(Applier &applier, const std::vector<SliceId> &ids) {
  if (auto *gpu = dynamic_cast<GpuApplier *>(&applier))
    gpu->retire(ids);
}

const std::vector<AppliedSlice> *appliedGpuSlices(const Applier &applier) {
  auto *gpu = dynamic_cast<const GpuApplier *>(&applier);
  return gpu ? &gpu->slices() : nullptr;
}

} // namespace msc::exec
