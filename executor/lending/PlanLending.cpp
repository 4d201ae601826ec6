#include "executor/lending/PlanLending.h"

#include <algorithm>
#include <map>
#include <set>

namespace msc::exec::lending {

std::optional<Owner> ownerOf(const plan::Plan &plan) {
  if (plan.lending().phases().empty())
    return std::nullopt;
  Owner o;
  o.contract = plan.provenance().contract();
  std::map<std::string, std::set<unsigned>> cpusOfRole;
  std::set<unsigned> all;
  for (const plan::IoBinding &b : plan.io_bindings())
    for (uint32_t c : b.cpus()) {
      cpusOfRole[b.role()].insert(c);
      all.insert(c);
    }
  o.cpus.assign(all.begin(), all.end());
  for (const plan::Phase &p : plan.lending().phases()) {
    PhaseSpec spec;
    spec.name = p.name();
    std::set<unsigned> kept;
    for (const plan::Phase::Use &use : p.uses())
      if (std::find(use.exclusive().begin(), use.exclusive().end(), "cpu") != use.exclusive().end())
        if (auto it = cpusOfRole.find(use.role()); it != cpusOfRole.end())
          kept.insert(it->second.begin(), it->second.end());
    spec.keptCpus.assign(kept.begin(), kept.end());
    switch (p.trigger()) {
    case plan::Phase::STEPS:
      spec.trigger = PhaseSpec::Trigger::Steps;
      spec.everySteps = p.every_steps();
      spec.forSteps = p.for_steps();
      break;
    case plan::Phase::WALL_TIME:
      spec.trigger = PhaseSpec::Trigger::WallTime;
      spec.fromNs = p.from_ns();
      spec.toNs = p.to_ns();
      break;
    default:
      spec.trigger = PhaseSpec::Trigger::Worker;
      break;
    }
    o.phases.push_back(std::move(spec));
  }
  if (plan.lending().reclaim_within_ns())
    o.reclaimWithinNs = plan.lending().reclaim_within_ns();
  o.leadAuto = plan.lending().lead_auto();
  o.leadNs = plan.lending().lead_ns();
  return o;
}

unsigned mostLent(const Owner &owner) {
  size_t most = 0;
  for (const PhaseSpec &p : owner.phases)
    most = std::max(most, owner.cpus.size() - std::min(owner.cpus.size(), p.keptCpus.size()));
  return unsigned(most);
}

bool isBorrower(const plan::Plan &plan) { return plan.has_borrow(); }

} // namespace msc::exec::lending
