#include "executor/lending/ReclaimLedger.h"

#include <algorithm>
#include <cmath>

namespace msc::exec::lending {

void ReclaimStats::record(uint64_t ns) {
  if (latenciesNs.size() >= 2 * kLatencyWindow) // amortised: one move per kLatencyWindow samples
    latenciesNs.erase(latenciesNs.begin(), latenciesNs.begin() + long(latenciesNs.size() - kLatencyWindow));
  latenciesNs.push_back(ns);
  worstNs = std::max(worstNs, ns);
  sumNs += ns;
  size_t b = size_t(std::lower_bound(std::begin(kReclaimBucketsNs), std::end(kReclaimBucketsNs), ns) -
                    std::begin(kReclaimBucketsNs));
  ++buckets[b];
}

void ReclaimLedger::entered(const std::string &owner, uint64_t enteredNs, bool lent, uint64_t boundNs) {
  ReclaimStats &s = stats_[owner];
  ++s.entries;
  if (!lent) {
    ++s.ahead;
    s.record(0);
    return;
  }
  ++s.reclaims;
  // A phase entered while the last reclaim is still open measures from the first entry: the owner
  // has been waiting since then.
  open_.try_emplace(owner, Open{enteredNs, enteredNs + boundNs});
}

void ReclaimLedger::reclaimed(const std::string &owner, uint64_t doneNs) {
  auto it = open_.find(owner);
  if (it == open_.end())
    return;
  ReclaimStats &s = stats_[owner];
  s.record(doneNs > it->second.enteredNs ? doneNs - it->second.enteredNs : 0);
  if (doneNs > it->second.deadlineNs)
    ++s.missed;
  open_.erase(it);
}

bool ReclaimLedger::open(const std::string &owner, uint64_t *deadlineNs) const {
  auto it = open_.find(owner);
  if (it != open_.end() && deadlineNs)
    *deadlineNs = it->second.deadlineNs;
  return it != open_.end();
}

const ReclaimStats &ReclaimLedger::stats(const std::string &owner) const {
  static const ReclaimStats kNone;
  auto it = stats_.find(owner);
  return it == stats_.end() ? kNone : it->second;
}

ReclaimStats ReclaimLedger::total() const {
  ReclaimStats t;
  for (const auto &[owner, s] : stats_) {
    t.entries += s.entries, t.ahead += s.ahead, t.reclaims += s.reclaims, t.missed += s.missed;
    t.latenciesNs.insert(t.latenciesNs.end(), s.latenciesNs.begin(), s.latenciesNs.end());
    t.worstNs = std::max(t.worstNs, s.worstNs);
    t.sumNs += s.sumNs;
    for (size_t b = 0; b < kReclaimBuckets; ++b)
      t.buckets[b] += s.buckets[b];
  }
  return t;
}

uint64_t quantile(std::vector<uint64_t> values, double q) {
  if (values.empty())
    return 0;
  size_t rank = size_t(std::ceil(q * double(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size());
  std::nth_element(values.begin(), values.begin() + long(rank - 1), values.end());
  return values[rank - 1];
}

} // namespace msc::exec::lending
