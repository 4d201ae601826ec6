// The node's re-check of a plan before anything is applied. The plan carries no contract IR, so
// this judges the plan's claims (claimsFromPlan) with the same rules the compiler used: first the
// topology fingerprint (a plan for another machine is refused; a node that changed is told what
// changed), then every rule against the live topology and what admitted contracts hold. Claims
// from a plan have no source ranges; diagnostics name the plan file instead.
#pragma once

#include "admission/Claims.h"
#include "hal/Topology.h"
#include "plan/plan.pb.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/ArrayRef.h>

#include <string>

namespace msc::admission {

struct RecheckOptions {
  std::string planName = "plan";   // the file (or "submitted plan") named in every location
  bool strictFingerprint = false;   // any fingerprint difference is ERR_EXEC_002
  bool allowReservation = true;     // honour the plan's reserve_pages (node config may forbid)
};

// True when the plan may be applied. Warnings (WRN_EXEC_001 and the rules' WRN_HAL_*: a GPU fact
// or free hugepages the topology does not give, SMT siblings in one role) do not fail it.
bool recheckPlan(const plan::Plan &plan, const hal::Topology &live, const Held &held, DiagnosticEngine &diags,
                 const RecheckOptions &options = {});

// What a set of admitted plans holds on their node. The executor applies a plan's hugepage pool
// when it admits it, so on the node their pages are already gone from the free counts.
Held heldByPlans(llvm::ArrayRef<const plan::Plan *> plans, bool hugepagesTakenFromFree);

} // namespace msc::admission
