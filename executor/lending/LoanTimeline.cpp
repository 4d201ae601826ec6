#include "executor/lending/LoanTimeline.h"

#include <algorithm>

namespace msc::exec::lending {

void LoanTimeline::owner(const std::string &contract, const std::vector<unsigned> &phases, uint64_t atNs) {
  auto [it, added] = lastPhases_.try_emplace(contract, phases);
  if (!added && it->second == phases)
    return;
  it->second = phases;
  add({atNs, contract, false, phases, {}});
}

void LoanTimeline::borrower(const std::string &contract, const CpuSet &cpus, uint64_t atNs) {
  auto [it, added] = lastCpus_.try_emplace(contract, cpus);
  if (!added && it->second == cpus)
    return;
  it->second = cpus;
  add({atNs, contract, true, {}, cpus});
}

void LoanTimeline::add(TimelineChange change) {
  // An owner's entry is stamped by its worker, a moment before the node read it: the record keeps
  // time in order, so a reader never sees a change undone before it was made.
  if (!changes_.empty())
    change.atNs = std::max(change.atNs, changes_.back().atNs);
  changes_.push_back(std::move(change));
  while (changes_.size() > capacity_)
    changes_.pop_front();
}

} // namespace msc::exec::lending
