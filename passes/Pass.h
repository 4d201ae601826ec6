// A check over one contract and one node's topology. Passes read the IR and the topology value,
// never the live machine, and report through the diagnostics table. Each pass has a command-line
// name and a one-line summary so it can be run and tested alone (`mscalec --passes=NAME`).
#pragma once

#include "hal/Topology.h"
#include "ir/IR.h"
#include "passes/Admission.h"
#include "passes/Placement.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringRef.h>

#include <memory>

namespace msc::passes {

struct PassContext {
  const ir::Contract &contract;
  const hal::Topology *topology;  // null when compiling without a node (topology-free checks only)
  const AdmittedSet &admitted;    // what other contracts already hold on the node
  DiagnosticEngine &diags;
  Placement &placement;
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
