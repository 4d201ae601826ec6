#include "sim/FaultModel.h"

#include <algorithm>
#include <cmath>

namespace msc::sim {

namespace {
constexpr double kHourNs = 3.6e12;

// A uniform draw in [0, 1) from the top 53 bits of one output.
double uniform(std::mt19937_64 &rng) { return double(rng() >> 11) * 0x1.0p-53; }

// A uniform index below n (n > 0) without modulo bias worth the name at these sizes: 53 bits.
uint64_t below(uint64_t n, std::mt19937_64 &rng) {
  return std::min<uint64_t>(n - 1, uint64_t(uniform(rng) * double(n)));
}

Scope scopeOf(const char *name) {
  std::string_view s(name);
  return s == "Gpu" ? Scope::Gpu : s == "Node" ? Scope::Node : Scope::Job;
}
} // namespace

const char *scopeName(Scope scope) {
  switch (scope) {
  case Scope::Gpu:
    return "GPU";
  case Scope::Node:
    return "node";
  case Scope::Job:
    return "job";
  }
  return "?";
}

bool takesNodeOut(exec::FaultClass c) {
  switch (c) {
  case exec::FaultClass::GpuLost:
  case exec::FaultClass::NodeLost:
  case exec::FaultClass::RdmaPortDown:
  case exec::FaultClass::NvmeIoError:
    return true;
  default:
    return false;
  }
}

std::vector<FaultCause> faultCauses(RateTable table) {
  std::vector<FaultCause> out;
  if (table == RateTable::Llama3) {
    // Observed on the job of 16,384 GPUs, 2,048 nodes, over 54 days: per component of its scope.
    auto observed = [](Scope scope) { return scope == Scope::Gpu ? 16384.0 : scope == Scope::Node ? 2048.0 : 1.0; };
#define LLAMA3_CAUSE(Id, Name, ScopeName, Class, Events, Source)                                            \
  out.push_back({#Id, Name, scopeOf(#ScopeName), exec::FaultClass::Class,                                    \
                 double(Events) / (observed(scopeOf(#ScopeName)) * 54 * 24), Source});
#include "sim/FaultCauses.def"
  } else {
#define SEED_CAUSE(Id, Name, ScopeName, Class, Events, Components, Days, Source)                          \
  out.push_back({#Id, Name, scopeOf(#ScopeName), exec::FaultClass::Class,                                    \
                 double(Events) / (double(Components) * double(Days) * 24), Source});
#include "sim/FaultCauses.def"
  }
  return out;
}

const char *rateTableName(RateTable table) { return table == RateTable::Llama3 ? "llama3" : "seed"; }

std::optional<RateTable> rateTableNamed(std::string_view name) {
  for (RateTable t : {RateTable::Llama3, RateTable::Seed})
    if (name == rateTableName(t))
      return t;
  return std::nullopt;
}

FaultModel::FaultModel(std::vector<FaultCause> causes, ClusterShape shape)
    : causes_(std::move(causes)), shape_(shape) {
  for (size_t i = 0; i < causes_.size(); ++i) {
    total_ += perHour(i);
    cumulative_.push_back(total_);
  }
}

size_t FaultModel::components(Scope scope) const {
  switch (scope) {
  case Scope::Gpu:
    return size_t(shape_.gpus());
  case Scope::Node:
    return shape_.nodes;
  case Scope::Job:
    return 1;
  }
  return 0;
}

double FaultModel::perHour(size_t cause) const {
  return causes_[cause].perComponentHour * double(components(causes_[cause].scope));
}

Fault FaultModel::next(uint64_t nowNs, std::mt19937_64 &rng) const {
  Fault f;
  if (total_ <= 0) {
    f.atNs = UINT64_MAX;
    return f;
  }
  double hours = -std::log1p(-uniform(rng)) / total_;
  double ns = hours * kHourNs;
  f.atNs = ns >= double(UINT64_MAX - nowNs) ? UINT64_MAX : nowNs + uint64_t(ns);
  double pick = uniform(rng) * total_;
  f.cause = size_t(std::upper_bound(cumulative_.begin(), cumulative_.end(), pick) - cumulative_.begin());
  f.cause = std::min(f.cause, causes_.size() - 1);
  switch (causes_[f.cause].scope) {
  case Scope::Gpu: {
    uint64_t gpu = below(shape_.gpus(), rng);
    f.node = unsigned(gpu / shape_.gpusPerNode);
    f.gpu = unsigned(gpu % shape_.gpusPerNode);
    break;
  }
  case Scope::Node:
    f.node = unsigned(below(shape_.nodes, rng));
    break;
  case Scope::Job:
    break;
  }
  return f;
}

} // namespace msc::sim
