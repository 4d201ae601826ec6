// What a node's lending did over time, for people (`mscale-cli node loans --timeline FILE.svg`):
// each owner's active phases and the CPUs lent to each borrower, recorded when they change, at the
// time the change was made. Bounded: the newest `capacity` changes are kept, so an agent that lends
// for weeks keeps the last minutes of a busy node, not all of it.
#pragma once

#include "executor/lending/LoanPlanner.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace msc::exec::lending {

struct TimelineChange {
  uint64_t atNs = 0;
  std::string contract;
  bool borrower = false;        // false: an owner's active phases changed
  std::vector<unsigned> phases; // an owner's active phases (numbers, ascending; none: it keeps all)
  CpuSet cpus;                  // a borrower's lent CPUs (none: frozen or ended)
};

class LoanTimeline {
public:
  explicit LoanTimeline(size_t capacity = 16384) : capacity_(capacity) {}
  // Each records only a change from the contract's last record.
  void owner(const std::string &contract, const std::vector<unsigned> &phases, uint64_t atNs);
  void borrower(const std::string &contract, const CpuSet &cpus, uint64_t atNs);
  // Oldest first; times never go backwards.
  const std::deque<TimelineChange> &changes() const { return changes_; }

private:
  void add(TimelineChange change);

  size_t capacity_;
  std::deque<TimelineChange> changes_;
  std::map<std::string, std::vector<unsigned>> lastPhases_;
  std::map<std::string, CpuSet> lastCpus_;
};

} // namespace msc::exec::lending
