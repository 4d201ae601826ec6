// The executor's re-check of a plan before anything is applied: the plan carries no contract IR, so
// this works on the plan's resolved facts. First the topology fingerprint (a plan for another
// machine is refused; a node that changed is told what changed), then the facts the validation
// passes check (CPUs, NUMA nodes, hugepages, GPUs, RDMA ports, block devices) against the live
// topology, then admission against the contracts already admitted on the node. Diagnostics reuse
// the passes' codes and carry a file-only location naming the plan.
#pragma once

#include "hal/Topology.h"
#include "ir/plan.pb.h"
#include "passes/Admission.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

namespace msc::passes {

struct RecheckOptions {
  std::string planName = "plan";   // the file (or "submitted plan") named in every location
  bool strictFingerprint = false;   // any fingerprint difference is ERR_EXEC_002
  bool allowReservation = true;     // honour the plan's reserve_pages (node config may forbid)
};

// True when the plan may be applied. Warnings (WRN_EXEC_001, WRN_HAL_HUGE_003) do not fail it.
bool recheckPlan(const plan::Plan &plan, const hal::Topology &live, const AdmittedSet &admitted,
                 DiagnosticEngine &diags);
bool recheckPlan(const plan::Plan &plan, const hal::Topology &live, const AdmittedSet &admitted,
                 DiagnosticEngine &diags, const RecheckOptions &options);

} // namespace msc::passes
