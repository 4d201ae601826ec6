// Every time an owner entered a phase, whether what the phase keeps was already home (taken back
// ahead, by the lead) or lent, and then how long the node took to take it back, against the bound the
// contract was promised (lending.reclaim_within). The node's own account, for `contract status`, the
// metrics and the benchmark; the guarantee itself is checked by an observer that does not trust it
// (ThreadPlacement.h). Pure: fed times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace msc::exec::lending {

// The upper bounds of the reclaim-latency histogram (Prometheus `le`, the bench's buckets); a last
// bucket takes everything above.
inline constexpr uint64_t kReclaimBucketsNs[] = {10'000,    50'000,    100'000,    250'000,    500'000,
                                                 1'000'000, 2'000'000, 5'000'000, 10'000'000, 100'000'000};
inline constexpr size_t kReclaimBuckets = std::size(kReclaimBucketsNs) + 1;

struct ReclaimStats {
  uint64_t entries = 0;  // phase entries that keep CPUs
  uint64_t ahead = 0;    // ... whose CPUs were home already: the owner did not wait
  uint64_t reclaims = 0; // ... that found them lent and had to take them back
  uint64_t missed = 0;   // ... of which took longer than the bound
  // Of each entry, oldest first, the time from the entry until its CPUs were home (0: ahead). Only
  // the newest kLatencyWindow are kept (an owner enters phases for weeks); the counts below are of
  // every one.
  std::vector<uint64_t> latenciesNs;
  uint64_t worstNs = 0;
  uint64_t sumNs = 0;
  uint64_t buckets[kReclaimBuckets] = {}; // per bucket of kReclaimBucketsNs, not cumulative
  static constexpr size_t kLatencyWindow = 1u << 16;
  void record(uint64_t ns);
};

class ReclaimLedger {
public:
  // `owner` entered a phase at `enteredNs`; `lent`: borrowers ran on CPUs it keeps at that instant.
  void entered(const std::string &owner, uint64_t enteredNs, bool lent, uint64_t boundNs);
  // The node has taken back everything `owner`'s phase keeps, at `doneNs`.
  void reclaimed(const std::string &owner, uint64_t doneNs);
  // Whether a reclaim of `owner` is open, and its deadline.
  bool open(const std::string &owner, uint64_t *deadlineNs = nullptr) const;
  const ReclaimStats &stats(const std::string &owner) const;
  ReclaimStats total() const;

private:
  struct Open {
    uint64_t enteredNs = 0, deadlineNs = 0;
  };
  std::map<std::string, ReclaimStats> stats_;
  std::map<std::string, Open> open_;
};

// The q-quantile (0..1) of `values` by the nearest rank; 0 for none.
uint64_t quantile(std::vector<uint64_t> values, double q);

} // namespace msc::exec::lending
