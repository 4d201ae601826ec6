// How a node lends units of a device share and takes them back (LoanPlanner.h's ShareKind): GPU
// slices (GpuLoans.h) and RDMA queue pairs (RdmaLoans.h). Neither can be frozen from the host: a
// borrower's kernels in flight run to their end, its work requests complete or fail. Taking back
// is therefore the hand-back in the device's backend and the borrower's acknowledgement on its
// control page; one that does not acknowledge in time is ended by the node (LendingNode), which is
// the one hand-back every device guarantees (a process's contexts and queue pairs die with it).
#pragma once

#include "executor/lending/LoanPlanner.h"

#include <string>

namespace msc::exec::lending {

class ShareLoanMechanism {
public:
  virtual ~ShareLoanMechanism() = default;
  // Lends `loan` to `borrower`: the units leave the owner's share for one of the borrower's, and
  // its worker is told where they are. False with `error`, nothing changed.
  virtual bool lend(const std::string &borrower, const ShareLoan &loan, std::string &error) = 0;
  // Takes back what `borrower` was lent: its share is gone, the owner's is whole again, and its
  // worker is told to let go. False with `error` when the owner's share could not be made whole
  // again (the borrower's is gone all the same).
  virtual bool takeBack(const std::string &borrower, std::string &error) = 0;
  // Whether the borrower's worker has let go of what was last taken back (it acknowledged the
  // hand-over, or there is no worker to tell).
  virtual bool released(const std::string &borrower) = 0;
};

} // namespace msc::exec::lending
