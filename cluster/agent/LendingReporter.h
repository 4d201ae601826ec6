// What the node lends, as its agent publishes it (/mscale/lending/<node>, Keys.h: LendingRecord) so
// that the leader places borrowers where lendable capacity is (cluster/controller/Borrowers.h). The
// node's lending (executor/agent/NodeLending.h) is sampled every `interval` of the injected clock;
// over each window, per resource (CPUs, GPU units, queue pairs), the share of time its owners' most
// was lendable (their phase rhythm) and what was lent on average are worked out. Only a change is
// handed on: who lends and how much at most at once, and a share or what is lent when they moved by
// at least `shareStep` / one unit. Phases
// change every few milliseconds; the cluster needs their rhythm, not each of them. A change of who
// lends, or of their most, is sampled at once (movesOwners): a borrower on a node whose owner left
// must not wait for the next window to be moved.
#pragma once

#include "cluster/keys/Keys.h"
#include "executor/agent/NodeLending.h"
#include "support/Clock.h"

#include <chrono>
#include <cstdint>
#include <optional>

namespace msc::cluster {

struct LendingReporterOptions {
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  uint32_t shareStepPermille = 50;
};

class LendingReporter {
public:
  LendingReporter(LendingReporterOptions options, const Clock &clock);

  // Whether a sample is due (the first one is due at once).
  bool due() const;
  // Whether `most` (NodeLending::most()) says otherwise than the record returned last about who
  // lends or how much at their most: a sample is due now.
  bool movesOwners(const exec::LendingOffer &most) const;
  // Takes the sample `offer` (NodeLending::offer(), or an empty one for a node that lends nothing)
  // and returns the record when it differs from the one returned last; nullopt when nothing is due
  // (neither the interval passed nor the owners moved) or nothing changed enough.
  std::optional<LendingRecord> sample(const exec::LendingOffer &offer);
  // The record a fresh registration publishes again (its lease is new: the old key went with the
  // old lease); nullopt before the first sample.
  const std::optional<LendingRecord> &published() const { return published_; }

private:
  LendingReporterOptions options_;
  const Clock &clock_;
  std::optional<uint64_t> sampledAtNs_;
  std::optional<exec::LendingOffer> previous_;
  std::optional<LendingRecord> published_;
};

} // namespace msc::cluster
