// How a node lends GPU slices and takes them back. The owner's slice in its GPU backend (`cuda` or
// `sim`, executor/gpu) hands the lent SMs over to a slice of the borrower's at the least urgent
// stream priority (a green-context hand-back: the owner's slice is made again without them, and
// again with them when they come back), and the borrower's worker is told through its control
// page's slice hand-over (MSCALE_GPU_SLICES syntax; an empty text: let go). A CPU machine shows the
// decisions and the book-keeping over the `sim` backend; what a GPU adds (kernel preemption
// latency) is measured only on one.
#pragma once

#include "executor/gpu/GpuBackend.h"
#include "executor/lending/ShareLoans.h"
#include "worker/WorkerApi.h"

#include <map>
#include <string>

namespace msc::exec::lending {

class BackendGpuLoans final : public ShareLoanMechanism {
public:
  // The owner's share `share` (LoanPlanner's index) is slice `id` of `backend`, `units` units of it.
  // False with `error` when the slice cannot be read.
  bool addShare(const std::string &owner, unsigned share, GpuBackend &backend, SliceId id, unsigned units,
                unsigned gpuIndex, std::string &error);
  // Forgets an owner's shares; nothing of them may be lent any more (the caller took it back).
  void removeOwner(const std::string &owner);
  // Where `borrower`'s worker is told of its slice (null: it has none, or no longer); a new page is
  // told at once what the borrower is lent now.
  void setPage(const std::string &borrower, mscale::worker::ControlPage *page);

  bool lend(const std::string &borrower, const ShareLoan &loan, std::string &error) override;
  bool takeBack(const std::string &borrower, std::string &error) override;
  bool released(const std::string &borrower) override;

  // The SMs `borrower` has now (0: none), and the owner share's SMs now (for status and tests).
  unsigned smsOf(const std::string &borrower) const;
  unsigned ownerSms(const std::string &owner, unsigned share) const;

private:
  struct Share {
    GpuBackend *backend = nullptr;
    SliceId id = 0;
    unsigned units = 0, sms = 0, gpuIndex = 0; // sms: whole, as held
    unsigned lentUnits = 0;
  };
  struct Lent {
    ShareLoan loan;
    SliceId id = 0;
    unsigned sms = 0;
    std::string told; // what its worker is told it has (MSCALE_GPU_SLICES syntax)
  };
  // A share whole is exactly the SMs it held; a part, its units' share of them.
  static unsigned smsFor(const Share &s, unsigned units) { return units >= s.units ? s.sms : s.sms / s.units * units; }
  uint64_t tell(const std::string &borrower, const std::string &slices);

  std::map<std::pair<std::string, unsigned>, Share> shares_;
  std::map<std::string, Lent> lent_;
  std::map<std::string, mscale::worker::ControlPage *> pages_;
  std::map<std::string, uint64_t> releasing_; // borrower -> generation of its let-go
};

} // namespace msc::exec::lending
