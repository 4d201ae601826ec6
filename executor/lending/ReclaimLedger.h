// Every time an owner entered a phase, whether what the phase keeps was already home (taken back
// ahead, by the lead) or lent, and then how long the node took to take it back, against the bound the
// contract was promised (lending.reclaim_within). The node's own account, for `contract status`, the
// metrics and the benchmark; the guarantee itself is checked by an observer that does not trust it
// (ThreadPlacement.h). Pure: fed times.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::exec::lending {

struct ReclaimStats {
  uint64_t entries = 0;  // phase entries that keep CPUs
  uint64_t ahead = 0;    // ... whose CPUs were home already: the owner did not wait
  uint64_t reclaims = 0; // ... that found them lent and had to take them back
  uint64_t missed = 0;   // ... of which took longer than the bound
  std::vector<uint64_t> latenciesNs; // of each reclaim (entry to done); an ahead entry counts 0
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
