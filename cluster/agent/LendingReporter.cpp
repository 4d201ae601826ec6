#include "cluster/agent/LendingReporter.h"

#include <algorithm>
#include <tuple>

namespace msc::cluster {

LendingReporter::LendingReporter(LendingReporterOptions options, const Clock &clock)
    : options_(options), clock_(clock) {}

bool LendingReporter::due() const {
  return !sampledAtNs_ ||
         clock_.monotonicNs() - *sampledAtNs_ >= uint64_t(std::chrono::nanoseconds(options_.interval).count());
}

bool LendingReporter::movesOwners(const exec::LendingOffer &most) const {
  return published_ && (published_->owners != most.owners || published_->cpus != most.cpus ||
                        published_->gpuUnits != most.gpuUnits || published_->rdmaQueuePairs != most.rdmaQueuePairs);
}

namespace {

// One resource's counters in an offer: its most, lendable and lent now, and its lendable and lent
// unit-time so far.
struct Counters {
  unsigned most, lendable, lent;
  uint64_t lendableNs, lentNs;
};

Counters cpusOf(const exec::LendingOffer &o) {
  return {o.cpus, o.lendableCpus, o.lentCpus, o.lendableCoreNs, o.lentCoreNs};
}

Counters unitsOf(const exec::LendingOffer &o, exec::lending::ShareKind kind) {
  return {kind == exec::lending::kGpuShare ? o.gpuUnits : o.rdmaQueuePairs, o.lendableUnits[kind], o.lentUnits[kind],
          o.lendableUnitNs[kind], o.lentUnitNs[kind]};
}

// The share of time `now.most` was lendable, and the units lent on average, over the window since
// `before`; with no window (`before` null, or its counters started anew), what is lendable and lent
// now stand for them until one has passed.
std::pair<uint32_t, uint32_t> shareAndLent(const Counters &now, const Counters *before, uint64_t ns) {
  if (!now.most)
    return {0, 0};
  if (before && ns && before->most == now.most && now.lendableNs >= before->lendableNs && now.lentNs >= before->lentNs) {
    double lendable = double(now.lendableNs - before->lendableNs) / (double(ns) * now.most);
    return {uint32_t(std::min(1000.0, lendable * 1000.0 + 0.5)), uint32_t(double(now.lentNs - before->lentNs) / double(ns) + 0.5)};
  }
  return {std::min(1000u, now.lendable * 1000u / now.most), now.lent};
}

} // namespace

std::optional<LendingRecord> LendingReporter::sample(const exec::LendingOffer &offer) {
  if (!due() && !movesOwners(offer))
    return std::nullopt;
  sampledAtNs_ = clock_.monotonicNs();
  LendingRecord r{offer.owners, offer.cpus, offer.gpuUnits, 0, 0, offer.rdmaQueuePairs};
  // Over the window since the last sample, while the same owners lend: the lending's own counters
  // (a lending started anew, e.g. when its last owner left, starts them again).
  bool window = previous_ && previous_->owners == offer.owners && offer.atNs > previous_->atNs;
  uint64_t ns = window ? offer.atNs - previous_->atNs : 0;
  auto measure = [&](const Counters &now, const Counters &before, uint32_t &share, uint32_t &lent) {
    std::tie(share, lent) = shareAndLent(now, window ? &before : nullptr, ns);
  };
  using exec::lending::kGpuShare, exec::lending::kRdmaShare;
  const exec::LendingOffer &before = window ? *previous_ : offer; // read only with a window
  measure(cpusOf(offer), cpusOf(before), r.sharePermille, r.lentCpus);
  measure(unitsOf(offer, kGpuShare), unitsOf(before, kGpuShare), r.gpuSharePermille, r.lentGpuUnits);
  measure(unitsOf(offer, kRdmaShare), unitsOf(before, kRdmaShare), r.rdmaSharePermille, r.lentQueuePairs);
  previous_ = offer;
  auto moved = [](uint32_t a, uint32_t b, uint32_t step) { return (a > b ? a - b : b - a) >= step; };
  const uint32_t step = options_.shareStepPermille;
  if (published_ && published_->owners == r.owners && published_->cpus == r.cpus &&
      published_->gpuUnits == r.gpuUnits && published_->rdmaQueuePairs == r.rdmaQueuePairs &&
      !moved(published_->sharePermille, r.sharePermille, step) &&
      !moved(published_->gpuSharePermille, r.gpuSharePermille, step) &&
      !moved(published_->rdmaSharePermille, r.rdmaSharePermille, step) && !moved(published_->lentCpus, r.lentCpus, 1) &&
      !moved(published_->lentGpuUnits, r.lentGpuUnits, 1) && !moved(published_->lentQueuePairs, r.lentQueuePairs, 1))
    return std::nullopt;
  published_ = r;
  return r;
}

} // namespace msc::cluster
