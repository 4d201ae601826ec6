#include "executor/lending/PhaseRhythm.h"

#include <cmath>

namespace msc::exec::lending {

void PhaseRhythm::entered(unsigned phase, uint64_t atNs, bool others) {
  if (phase == 0)
    return;
  if (phases_.size() < phase)
    phases_.resize(phase);
  Estimate &e = phases_[phase - 1];
  if (e.entries && atNs > e.last && !others) {
    double sample = double(atNs - e.last);
    if (e.entries == 1) {
      e.interval = sample;
      e.deviation = sample / 2;
    } else {
      e.deviation += (std::fabs(sample - e.interval) - e.deviation) / 4;
      e.interval += (sample - e.interval) / 8;
    }
  }
  if (!e.entries || atNs > e.last)
    e.last = atNs;
  ++e.entries;
}

const PhaseRhythm::Estimate *PhaseRhythm::find(unsigned phase) const {
  return phase && phase <= phases_.size() ? &phases_[phase - 1] : nullptr;
}

std::optional<uint64_t> PhaseRhythm::nextEntry(unsigned phase, uint64_t nowNs) const {
  const Estimate *e = find(phase);
  if (!e || e->entries < 2 || e->interval < 1)
    return std::nullopt;
  uint64_t next = e->last + uint64_t(e->interval);
  return next > nowNs ? next : nowNs;
}

uint64_t PhaseRhythm::lead(unsigned phase, uint64_t reclaimNs) const {
  const Estimate *e = find(phase);
  return reclaimNs + (e ? uint64_t(4 * e->deviation) : 0);
}

uint64_t PhaseRhythm::interval(unsigned phase) const {
  const Estimate *e = find(phase);
  return e ? uint64_t(e->interval) : 0;
}

uint64_t PhaseRhythm::entries(unsigned phase) const {
  const Estimate *e = find(phase);
  return e ? e->entries : 0;
}

} // namespace msc::exec::lending
