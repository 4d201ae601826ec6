// How a node runs a borrower on lent CPUs and takes them back: the one seam between the decisions
// (LendingNode.h) and the kernel. CgroupLoans (cgroups, for real) and SimLoans (the simulator's and
// the unit tests', on virtual time) sit side by side behind it.
#pragma once

#include "executor/lending/LoanPlanner.h"

#include <string>
#include <vector>

namespace msc::exec::lending {

class LoanMechanism {
public:
  virtual ~LoanMechanism() = default;
  // Runs `borrower` on `cpus` (sorted), thawed; returns once none of its tasks can run outside
  // them. Empty: its freeze begins, and is done when settle() says so; meanwhile the CPUs it was on
  // are not back, and it may be moved elsewhere instead (which thaws it).
  virtual bool setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) = 0;
  enum class Settle { Done, Pending, Failed };
  // Whether the borrower's last change is complete (Done), its freeze still under way (Pending), or
  // the freeze failed (Failed, with `error`: it could not be frozen in time).
  virtual Settle settle(const std::string &borrower, std::string &error) = 0;
  // Throttles `borrower`'s IO to exactly `devices` (block device names, sorted; partitions stand
  // for their disk) from now on, and lifts it from any other; false with `error`.
  virtual bool throttleIo(const std::string &borrower, const std::vector<std::string> &devices, std::string &error) = 0;
  // Ends every process of `borrower`: the last resort when a reclaim fails, and how lent memory
  // comes back. Its cgroups stay until it is removed.
  virtual void end(const std::string &borrower) = 0;
};

} // namespace msc::exec::lending
