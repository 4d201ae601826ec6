#include "admission/PlanRecheck.h"

#include "admission/Rules.h"

#include <llvm/ADT/StringExtras.h>

namespace msc::admission {

namespace {

std::string hex(uint64_t v) { return "0x" + llvm::utohexstr(v, /*LowerCase=*/true); }
std::string nodeName(llvm::StringRef name) { return name.empty() ? "(unnamed)" : name.str(); }

Claims claimsToRecheck(const plan::Plan &plan, const RecheckOptions &options) {
  Claims claims = claimsFromPlan(plan);
  if (!options.allowReservation)
    for (RoleClaims &role : claims.roles)
      if (role.hugepages && role.hugepages->shortfall == HugepageClaim::Shortfall::Reserve)
        role.hugepages->shortfall = HugepageClaim::Shortfall::RefusedByNodeConfig;
  return claims;
}

} // namespace

Held heldByPlans(llvm::ArrayRef<const plan::Plan *> plans, bool hugepagesTakenFromFree) {
  Held held;
  held.hugepagesTakenFromFree = hugepagesTakenFromFree;
  for (const plan::Plan *p : plans)
    held.contracts.push_back(claimsFromPlan(*p));
  return held;
}

bool recheckPlan(const plan::Plan &plan, const hal::Topology &live, const Held &held, DiagnosticEngine &diags,
                 const RecheckOptions &options) {
  unsigned errorsBefore = diags.errorCount();
  Location where{{}, options.planName, 0};
  const plan::Provenance &prov = plan.provenance();
  uint64_t want = prov.topology_fingerprint(), have = live.fingerprint();
  bool changed = want != have;
  if (changed && prov.topology_name() != live.name()) {
    diags.report(DiagCode::ERR_EXEC_001, where)
            .note(Location::none(), "CPUs, NUMA nodes and devices are numbered per machine; recompile the "
                                    "contract with 'mscalec --topology live' on this node")
        << options.planName << nodeName(prov.topology_name()) << hex(want) << nodeName(live.name()) << hex(have);
    return false;
  }

  Claims claims = claimsToRecheck(plan, options);
  RuleContext ctx{live, diags, where};
  checkCpus(claims, ctx);
  std::vector<HugepageReservation> reservations = checkHugepages(claims, ctx);
  checkGpus(claims, ctx);
  checkRdmaPorts(claims, ctx);
  checkBlockDevices(claims, ctx);
  checkAgainstHeld(claims, held, ctx, reservations);

  bool resourcesOk = diags.errorCount() == errorsBefore;
  if (changed && resourcesOk) {
    if (options.strictFingerprint)
      diags.report(DiagCode::ERR_EXEC_002, where)
              .note(Location::none(), "every resource the plan uses is still there; without "
                                      "--strict-fingerprint this is a warning")
          << nodeName(live.name()) << options.planName << hex(want) << hex(have);
    else
      diags.report(DiagCode::WRN_EXEC_001, where)
              .note(Location::none(), "the fingerprint also covers free hugepages and temperatures, which "
                                      "change while the node runs")
          << nodeName(live.name()) << options.planName << hex(want) << hex(have);
  } else if (changed) {
    diags.report(DiagCode::ERR_EXEC_002, where)
            .note(Location::none(), "the errors above say what changed; recompile the contract with "
                                    "'mscalec --topology live'")
        << nodeName(live.name()) << options.planName << hex(want) << hex(have);
  }
  return diags.errorCount() == errorsBefore;
}

} // namespace msc::admission
