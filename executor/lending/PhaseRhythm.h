// The rhythm of a job's phases, learnt from when the worker enters them, for `lead = auto`: when each
// phase is next entered, and how early to start taking back what it keeps so that the owner never
// waits. Training is periodic (step after step), so each phase's interval between entries is
// estimated as TCP estimates a round trip (RFC 6298): a smoothed interval and its mean deviation.
// Pure: fed entry times (the control page's phaseEnteredNs), asked at a time; no clock of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace msc::exec::lending {

class PhaseRhythm {
public:
  // Phase `phase` (1-based, the control page's number) was entered at `atNs`. `others`: other
  // entries were made since the last one seen, unseen; the interval to this one is then ambiguous
  // (a missed entry of this phase would double it) and, as Karn's rule does for a retransmitted
  // segment's round trip, not sampled.
  void entered(unsigned phase, uint64_t atNs, bool others = false);
  // When `phase` is expected to be entered next, at or after `nowNs`: its last entry plus its
  // interval; a phase overdue is expected now. nullopt until two entries gave an interval.
  std::optional<uint64_t> nextEntry(unsigned phase, uint64_t nowNs) const;
  // How far ahead of nextEntry a reclaim of `reclaimNs` must start: the reclaim itself plus four
  // deviations of the interval (RFC 6298's margin), so a late-running rhythm is still ahead.
  uint64_t lead(unsigned phase, uint64_t reclaimNs) const;
  // The smoothed interval between entries of `phase` (0: not known yet).
  uint64_t interval(unsigned phase) const;
  uint64_t entries(unsigned phase) const;

private:
  struct Estimate {
    uint64_t last = 0, entries = 0;
    double interval = 0, deviation = 0;
  };
  const Estimate *find(unsigned phase) const;
  std::vector<Estimate> phases_; // index phase - 1
};

} // namespace msc::exec::lending
