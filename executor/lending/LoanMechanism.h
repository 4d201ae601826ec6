// How a node runs a borrower on lent CPUs and takes them back: the one seam between the decisions
// (LendingNode.h) and the kernel. CgroupLoans (cgroups, for real) and SimLoans (the simulator's and
// the unit tests', on virtual time) sit side by side behind it.
#pragma once

#include "executor/lending/LoanPlanner.h"

#include <string>

namespace msc::exec::lending {

class LoanMechanism {
public:
  virtual ~LoanMechanism() = default;
  // Runs `borrower` on `cpus` (sorted; empty: frozen). Returns once none of its tasks can run
  // outside them: a reclaim is done when this returns.
  virtual bool setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) = 0;
  // Ends every process of `borrower`: the last resort when a reclaim fails, and how lent memory
  // comes back. Its cgroups stay until it is removed.
  virtual void end(const std::string &borrower) = 0;
};

} // namespace msc::exec::lending
