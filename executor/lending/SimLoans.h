// The simulated lending mechanism: it keeps each borrower's CPUs as told and takes `costNs` of
// virtual time per change (a ManualClock moved forward), so LendingNode's reclaim machine runs in
// virtual time exactly as it runs over cgroups. A change may be made to fail, to test the fallbacks.
#pragma once

#include "executor/lending/LoanMechanism.h"
#include "support/Clock.h"

#include <functional>
#include <map>
#include <set>

namespace msc::exec::lending {

class SimLoans final : public LoanMechanism {
public:
  explicit SimLoans(ManualClock &clock, uint64_t costNs = 0) : clock_(clock), costNs_(costNs) {}
  bool setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) override;
  bool throttleIo(const std::string &borrower, const std::vector<std::string> &devices, std::string &error) override;
  Settle settle(const std::string &borrower, std::string &error) override;
  void end(const std::string &borrower) override;

  // Where each borrower runs now (frozen: empty; freezing: where it was), and whether it was ended.
  const CpuSet &cpusOf(const std::string &borrower) const;
  bool ended(const std::string &borrower) const { return ended_.count(borrower) != 0; }
  uint64_t changes() const { return changes_; }
  void setCost(uint64_t ns) { costNs_ = ns; }
  // A freeze completes this long after it was asked (a borrower whose threads wait to be scheduled);
  // one still pending after `failAfterNs` fails.
  void setFreezeTime(uint64_t ns, uint64_t failAfterNs = UINT64_MAX) {
    freezeNs_ = ns;
    freezeFailNs_ = failAfterNs;
  }
  bool freezing(const std::string &borrower) const { return freezingSince_.count(borrower) != 0; }
  // The next changes of `borrower` to a non-empty set fail (a cpuset write refused).
  void failShrinks(const std::string &borrower, bool fail);
  // The devices `borrower`'s IO is throttled to now; the next throttles of it fail when `fail`.
  const std::vector<std::string> &throttledOf(const std::string &borrower) const;
  void failThrottles(bool fail) { failThrottles_ = fail; }
  // Runs in every change, after its cost: what an owner does while the node is in the kernel.
  void onChange(std::function<void()> during) { during_ = std::move(during); }

private:
  ManualClock &clock_;
  uint64_t costNs_;
  uint64_t changes_ = 0;
  uint64_t freezeNs_ = 0, freezeFailNs_ = UINT64_MAX;
  std::map<std::string, uint64_t> freezingSince_;
  std::map<std::string, CpuSet> cpus_;
  std::set<std::string> ended_, failing_;
  std::map<std::string, std::vector<std::string>> throttled_;
  bool failThrottles_ = false;
  std::function<void()> during_;
};

} // namespace msc::exec::lending
