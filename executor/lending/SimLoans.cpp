#include "executor/lending/SimLoans.h"

namespace msc::exec::lending {

bool SimLoans::setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) {
  clock_.advance(costNs_);
  ++changes_;
  if (during_)
    during_();
  if (!cpus.empty() && failing_.count(borrower)) {
    error = "sim: the cpuset of borrower '" + borrower + "' refused " + std::to_string(cpus.size()) + " CPUs";
    return false;
  }
  cpus_[borrower] = cpus;
  return true;
}

void SimLoans::end(const std::string &borrower) {
  ended_.insert(borrower);
  cpus_[borrower].clear();
}

const CpuSet &SimLoans::cpusOf(const std::string &borrower) const {
  static const CpuSet kNone;
  auto it = cpus_.find(borrower);
  return it == cpus_.end() ? kNone : it->second;
}

void SimLoans::failShrinks(const std::string &borrower, bool fail) {
  if (fail)
    failing_.insert(borrower);
  else
    failing_.erase(borrower);
}

} // namespace msc::exec::lending
