// A check over one contract and one node's topology. Passes read the IR, its placement, its claims
// and the topology value, never the live machine, and report through the diagnostics table. Each
// pass has a command-line name and a one-line summary so it can be run and tested alone
// (`mscalec --passes=NAME`).
//
// The stages are ordered by their types: placement resolves the contract on the node, claims are
// built from it once, passes only read both, and what a pass decides for the plan goes into
// PlanDecisions, the one thing passes write and lowering reads.
#pragma once

#include "hal/Topology.h"
#include "ir/IR.h"
#include "admission/Claims.h"
#include "admission/Rules.h"
#include "passes/Placement.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringRef.h>

#include <memory>

namespace msc::passes {

// What passes decide for the plan beyond the contract's own values.
struct PlanDecisions {
  // Hugepages to reserve when the plan is applied (auto_allocate_hugepages), per role.
  std::vector<admission::HugepageReservation> hugepageReservations;
};

struct PassContext {
  const ir::Contract &contract;
  const hal::Topology *topology;   // null when compiling without a node (topology-free checks only)
  const admission::Held &held;     // what other contracts already hold on the node
  DiagnosticEngine &diags;
  const Placement &placement;
  const admission::Claims &claims; // the contract's claims on this node (passes/ContractClaims.h)
  PlanDecisions &decisions;

  // The rules' view of this context (requires a topology).
  admission::RuleContext rules() const { return {*topology, diags, Location::none()}; }
};

class Pass {
public:
  virtual ~Pass();
  virtual llvm::StringRef name() const = 0;
  virtual llvm::StringRef summary() const = 0;
  // Passes that need no topology run in every compile; the others only with --topology.
  virtual bool needsTopology() const { return true; }
  virtual void run(PassContext &ctx) = 0;
};

} // namespace msc::passes
