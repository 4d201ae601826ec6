#include "executor/lending/CgroupLoans.h"

namespace msc::exec::lending {

bool CgroupLoans::add(const std::string &borrower, const BorrowerLimits &limits, std::string &error) {
  if (borrowers_.count(borrower)) {
    error = "borrower '" + borrower + "' is already on this node";
    return false;
  }
  std::optional<BorrowerCgroup> made = BorrowerCgroup::create(layout_, borrower, limits, error);
  if (!made)
    return false;
  borrowers_.emplace(borrower, std::move(*made));
  return true;
}

bool CgroupLoans::join(const std::string &borrower, pid_t pid, std::string &error) {
  auto it = borrowers_.find(borrower);
  if (it == borrowers_.end()) {
    error = "no borrower '" + borrower + "' on this node";
    return false;
  }
  return it->second.join(pid, error);
}

void CgroupLoans::remove(const std::string &borrower) { borrowers_.erase(borrower); }

const BorrowerCgroup *CgroupLoans::find(const std::string &borrower) const {
  auto it = borrowers_.find(borrower);
  return it == borrowers_.end() ? nullptr : &it->second;
}

bool CgroupLoans::setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) {
  auto it = borrowers_.find(borrower);
  if (it == borrowers_.end()) {
    error = "no borrower '" + borrower + "' on this node";
    return false;
  }
  return it->second.setCpus(cpus, error);
}

LoanMechanism::Settle CgroupLoans::settle(const std::string &borrower, std::string &error) {
  auto it = borrowers_.find(borrower);
  if (it == borrowers_.end())
    return Settle::Done;
  switch (it->second.settle(error)) {
  case BorrowerCgroup::Settle::Done: return Settle::Done;
  case BorrowerCgroup::Settle::Pending: return Settle::Pending;
  case BorrowerCgroup::Settle::Failed: return Settle::Failed;
  }
  return Settle::Failed;
}

bool CgroupLoans::throttleIo(const std::string &borrower, const std::vector<std::string> &devices,
                             std::string &error) {
  auto it = borrowers_.find(borrower);
  if (it == borrowers_.end()) {
    error = "no borrower '" + borrower + "'";
    return false;
  }
  return it->second.throttleIo(devices, error);
}

void CgroupLoans::end(const std::string &borrower) {
  if (auto it = borrowers_.find(borrower); it != borrowers_.end())
    it->second.end();
}

} // namespace msc::exec::lending
