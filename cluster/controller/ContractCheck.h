// A submitted contract's source compiled by the frontend, as the leader does twice: when the
// submission arrives (refused at once when it does not compile) and when it places it. Diagnostics
// are kept as the tools print them: they go into replies and into /mscale/contract-status/<name>.
#pragma once

#include "ir/IR.h"
#include "support/Diagnostic.h"
#include "support/DiagnosticPrinters.h"

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <optional>
#include <string>

namespace msc::cluster {

// Diagnostics of one decision, printed as mscale-controller prints them, kept as text.
struct CapturedDiagnostics {
  std::string text;
  llvm::raw_string_ostream os{text};
  llvm::SourceMgr sm;
  std::unique_ptr<DiagnosticConsumer> printer =
      makeDiagnosticPrinter(DiagnosticsFormat::Text, os, "mscale-controller", "");
  DiagnosticEngine diags{&sm, *printer};
  // Call once the decision is made: the printer writes what it buffered.
  void done() {
    diags.finish();
    os.flush();
  }
  // The first error line ("error[ERR_...]: ..."), or the whole text when there is none.
  std::string firstLine() const;
};

struct ContractSourceOptions {
  std::string stdlibDir;  // for the contracts' imports; empty: the driver's default
  std::string scratchDir; // the frontend reads files: each check writes its source in a fresh
                          // directory under it, as "<contract>.msc", so diagnostics name that
};

// The module of `source`, compiled for contract `name` only, and that contract in it. nullopt with
// the diagnostics in `out` when the source does not compile, or (ERR_CLUSTER_007 in `out`) defines
// no contract `name`.
struct LoadedContract {
  ir::Module module;
  size_t index = 0; // of the contract `name` in module.contracts
  const ir::Contract &contract() const { return module.contracts[index]; }
};
std::optional<LoadedContract> loadSubmittedContract(const std::string &name, const std::string &source,
                                                    const ContractSourceOptions &options, CapturedDiagnostics &out);

} // namespace msc::cluster
