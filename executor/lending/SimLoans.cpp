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
  // A freeze leaves it where it is until it settles.
  if (cpus.empty() && !cpus_[borrower].empty()) {
    freezingSince_.emplace(borrower, clock_.monotonicNs());
    return true;
  }
  freezingSince_.erase(borrower);
  cpus_[borrower] = cpus;
  return true;
}

LoanMechanism::Settle SimLoans::settle(const std::string &borrower, std::string &error) {
  auto it = freezingSince_.find(borrower);
  if (it == freezingSince_.end())
    return Settle::Done;
  uint64_t waited = clock_.monotonicNs() - it->second;
  if (waited >= freezeNs_ && freezeNs_ < freezeFailNs_) {
    freezingSince_.erase(it);
    cpus_[borrower].clear();
    return Settle::Done;
  }
  if (waited >= freezeFailNs_) {
    error = "sim: borrower '" + borrower + "' did not freeze within " + std::to_string(freezeFailNs_) + " ns";
    return Settle::Failed;
  }
  return Settle::Pending;
}

bool SimLoans::throttleIo(const std::string &borrower, const std::vector<std::string> &devices, std::string &error) {
  if (failThrottles_) {
    error = "sim: the IO throttle of borrower '" + borrower + "' refused";
    return false;
  }
  throttled_[borrower] = devices;
  return true;
}

const std::vector<std::string> &SimLoans::throttledOf(const std::string &borrower) const {
  static const std::vector<std::string> kNone;
  auto it = throttled_.find(borrower);
  return it == throttled_.end() ? kNone : it->second;
}

void SimLoans::end(const std::string &borrower) {
  ended_.insert(borrower);
  freezingSince_.erase(borrower);
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
