#include "cluster/agent/LendingReporter.h"

#include <algorithm>

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

std::optional<LendingRecord> LendingReporter::sample(const exec::LendingOffer &offer) {
  if (!due() && !movesOwners(offer))
    return std::nullopt;
  sampledAtNs_ = clock_.monotonicNs();
  LendingRecord r{offer.owners, offer.cpus, offer.gpuUnits, 0, 0, offer.rdmaQueuePairs};
  // Over the window since the last sample, while the same owners lend: the lending's own counters
  // (a lending started anew, e.g. when its last owner left, starts them again).
  bool window = previous_ && previous_->owners == offer.owners && previous_->cpus == offer.cpus &&
                offer.atNs > previous_->atNs && offer.lendableCoreNs >= previous_->lendableCoreNs &&
                offer.lentCoreNs >= previous_->lentCoreNs;
  if (r.cpus && window) {
    double ns = double(offer.atNs - previous_->atNs);
    double lendable = double(offer.lendableCoreNs - previous_->lendableCoreNs) / (ns * r.cpus);
    r.sharePermille = uint32_t(std::min(1000.0, lendable * 1000.0 + 0.5));
    r.lentCpus = uint32_t(double(offer.lentCoreNs - previous_->lentCoreNs) / ns + 0.5);
  } else if (r.cpus) {
    // No window yet: what is lendable now stands for the share until one has passed.
    r.sharePermille = uint32_t(std::min(1000u, offer.lendableCpus * 1000u / r.cpus));
    r.lentCpus = offer.lentCpus;
  }
  previous_ = offer;
  auto moved = [](uint32_t a, uint32_t b, uint32_t step) { return (a > b ? a - b : b - a) >= step; };
  if (published_ && published_->owners == r.owners && published_->cpus == r.cpus &&
      published_->gpuUnits == r.gpuUnits && published_->rdmaQueuePairs == r.rdmaQueuePairs && !moved(published_->sharePermille, r.sharePermille, options_.shareStepPermille) &&
      !moved(published_->lentCpus, r.lentCpus, 1))
    return std::nullopt;
  published_ = r;
  return r;
}

} // namespace msc::cluster
