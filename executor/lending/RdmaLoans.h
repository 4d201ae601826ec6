// How a node lends RDMA queue pairs and takes them back. An owner's queue-pair group in its RDMA
// backend (`ibverbs` or `sim`, executor/rdma) gives up the lent queue pairs (the newest are
// destroyed) and a group of the borrower's is made of as many on the same port, with the owner's
// depth, retry count and timeout; the borrower's worker is told through its control page's
// queue-pair hand-over (MSCALE_RDMA syntax; an empty text: let go). Taking back destroys the
// borrower's group (its queue pairs go to the error state with it: work requests in flight are
// flushed, the one hand-back a queue pair has) and makes the owner's whole again. The node does not
// wait on a remote peer: a borrower's connections are its own to re-establish when it is lent again.
#pragma once

#include "executor/lending/ShareLoans.h"
#include "executor/rdma/RdmaBackend.h"
#include "worker/WorkerApi.h"

#include <map>
#include <string>

namespace msc::exec::lending {

class BackendRdmaLoans final : public ShareLoanMechanism {
public:
  // The owner's share `share` (LoanPlanner's index into Owner::rdmaShares) is group `id` of
  // `backend`, made from `setting` (its queue pairs are the share's units). False with `error` when
  // the setting has no queue pairs to lend.
  bool addShare(const std::string &owner, unsigned share, RdmaBackend &backend, QpGroupId id,
                const plan::RdmaSetting &setting, std::string &error);
  // Forgets an owner's shares; nothing of them may be lent any more (the caller took it back).
  void removeOwner(const std::string &owner);
  // Where `borrower`'s worker is told of its queue pairs (null: it has none, or no longer); a new
  // page is told at once what the borrower is lent now.
  void setPage(const std::string &borrower, mscale::worker::ControlPage *page);

  bool lend(const std::string &borrower, const ShareLoan &loan, std::string &error) override;
  bool takeBack(const std::string &borrower, std::string &error) override;
  bool released(const std::string &borrower) override;

  // The borrower's group now (0: none), and the owner share's queue pairs now (for status and tests).
  QpGroupId groupOf(const std::string &borrower) const;
  unsigned ownerQueuePairs(const std::string &owner, unsigned share) const;

private:
  struct Share {
    RdmaBackend *backend = nullptr;
    QpGroupId id = 0;
    plan::RdmaSetting setting; // as the owner's group was made
    unsigned lent = 0;         // of its queue pairs
  };
  struct Lent {
    ShareLoan loan;
    QpGroupId id = 0;
    std::string told; // what its worker is told it has (MSCALE_RDMA syntax)
  };
  uint64_t tell(const std::string &borrower, const std::string &queuePairs);

  std::map<std::pair<std::string, unsigned>, Share> shares_;
  std::map<std::string, Lent> lent_;
  std::map<std::string, mscale::worker::ControlPage *> pages_;
  std::map<std::string, uint64_t> releasing_; // borrower -> generation of its let-go
};

} // namespace msc::exec::lending
