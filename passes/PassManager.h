// Runs a pipeline of passes over a contract, deterministically: same inputs, same diagnostics,
// same order. Instrumentation: print the placement after a pass, time every pass.
#pragma once

#include "passes/Pass.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::passes {

// A contract after the middle of the pipeline: placed on the node, its claims built, the passes
// run. What lowering takes.
struct CheckedContract {
  // The contract with its roles of `gpus = N` expanded (passes/GpuCount.h) and its requests that
  // named no device bound on the node (passes/Binding.h), when it had any: what placement, claims
  // and passes saw. Its bound fields' origins say what was bound and why, so ir::print() of it is
  // `--emit=ir` with the bindings.
  std::optional<ir::Contract> bound;
  Placement placement;
  admission::Claims claims;
  PlanDecisions decisions;
  bool accepted = false; // no error: not from the expansion, the binding nor any pass
};

struct Instrumentation {
  std::vector<std::string> printAfter; // pass names, or "all"
  bool timePasses = false;
  llvm::raw_ostream *out = nullptr;    // where --print-after and --time-passes write
};

class PassManager {
public:
  // Every registered pass, in order.
  static PassManager defaultPipeline();
  // "pcie,cpu-numa": reports ERR_DRV_005 for an unknown name (with the closest one).
  static std::optional<PassManager> fromNames(llvm::StringRef csv, DiagnosticEngine &diags);

  void addPass(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  const std::vector<std::unique_ptr<Pass>> &passes() const { return passes_; }

  // Runs each pass in order; topology passes are skipped when ctx.topology is null.
  // Returns false if any pass reported an error.
  bool run(PassContext &ctx, const Instrumentation &instrumentation = {});

  // place -> claims -> run: the stages in their one order.
  CheckedContract check(const ir::Contract &contract, const hal::Topology *topology, const admission::Held &held,
                        DiagnosticEngine &diags, const Instrumentation &instrumentation = {});

private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

} // namespace msc::passes
