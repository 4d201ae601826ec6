#include "ir/IR.h"

#include <set>

namespace msc::ir {

// The frontend reports user errors; the verifier catches frontend bugs before anything
// downstream (passes, lowering) relies on the IR's invariants.
std::vector<std::string> verify(const Module &module) {
  std::vector<std::string> problems;
  auto fail = [&](std::string what) { problems.push_back(std::move(what)); };

  std::set<std::string> profileNames;
  for (const Profile &p : module.profiles) {
    if (p.name.empty())
      fail("profile without a name");
    if (!profileNames.insert(p.name).second)
      fail("profile '" + p.name + "' defined twice");
    if (p.chain.empty() || p.chain.front() != p.name)
      fail("profile '" + p.name + "' has a chain that does not start with itself");
  }
  auto checkBody = [&](const std::string &owner, const Body &body) {
    std::set<std::string> roleNames;
    for (const Role &role : body.roles) {
      if (!roleNames.insert(role.name).second)
        fail(owner + ": role '" + role.name + "' appears twice");
      if (const auto &cpus = role.fields.cpu_cores) {
        std::set<uint32_t> seen(cpus->value.begin(), cpus->value.end());
        if (seen.size() != cpus->value.size())
          fail(owner + ": role '" + role.name + "' lists a CPU twice");
      }
      if (const auto &pool = role.fields.memory_pool)
        if (pool->value.pageSize.value == 0 || (pool->value.pageSize.value & (pool->value.pageSize.value - 1)))
          fail(owner + ": role '" + role.name + "' has a page size that is not a power of two");
    }
    if (const auto &rp = body.faultTolerance.recovery_point)
      if ((rp->value.steps == 0) == (rp->value.interval.value == 0))
        fail(owner + ": recovery point must be steps or an interval");
  };
  std::set<std::string> contractNames;
  for (const Contract &c : module.contracts) {
    if (!contractNames.insert(c.name).second)
      fail("contract '" + c.name + "' defined twice");
    if (!c.profile.empty() && !profileNames.count(c.profile))
      fail("contract '" + c.name + "' uses unresolved profile '" + c.profile + "'");
    checkBody("contract '" + c.name + "'", c.body);
  }
  for (const Profile &p : module.profiles)
    checkBody("profile '" + p.name + "'", p.body);
  return problems;
}

} // namespace msc::ir
