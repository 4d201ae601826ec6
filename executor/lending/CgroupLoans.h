// The lending mechanism for real: one BorrowerCgroup per borrower (created frozen), its cpuset
// shrunk or the cgroup frozen to take CPUs back, its processes ended as the last resort.
#pragma once

#include "executor/lending/BorrowerCgroup.h"
#include "executor/lending/LoanMechanism.h"

#include <map>

namespace msc::exec::lending {

class CgroupLoans final : public LoanMechanism {
public:
  explicit CgroupLoans(CgroupLayout layout)
      : layout_(std::move(layout)), keepFreezerOn_(FreezerKeepAlive::create(layout_)) {}
  // A borrower's cgroups, frozen and on no CPU until it is lent some; false with `error`.
  bool add(const std::string &borrower, const BorrowerLimits &limits, std::string &error);
  bool join(const std::string &borrower, pid_t pid, std::string &error);
  void remove(const std::string &borrower); // ends it and removes its cgroups
  const BorrowerCgroup *find(const std::string &borrower) const;

  bool setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) override;
  Settle settle(const std::string &borrower, std::string &error) override;
  bool throttleIo(const std::string &borrower, const std::vector<std::string> &devices, std::string &error) override;
  void end(const std::string &borrower) override;

private:
  CgroupLayout layout_;
  std::unique_ptr<FreezerKeepAlive> keepFreezerOn_; // before the borrowers: destroyed after them
  std::map<std::string, BorrowerCgroup> borrowers_;
};

} // namespace msc::exec::lending
