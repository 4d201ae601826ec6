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
// `sm` holds the sources the diagnostics point into; a decision about a contract compiled earlier
// prints with that compile's SourceMgr.
struct CapturedDiagnostics {
  explicit CapturedDiagnostics(std::shared_ptr<llvm::SourceMgr> sources = std::make_shared<llvm::SourceMgr>())
      : sm(std::move(sources)) {}
  std::string text;
  llvm::raw_string_ostream os{text};
  std::shared_ptr<llvm::SourceMgr> sm;
  std::unique_ptr<DiagnosticConsumer> printer =
      makeDiagnosticPrinter(DiagnosticsFormat::Text, os, "mscale-controller", "");
  DiagnosticEngine diags{sm.get(), *printer};
  // Call once the decision is made: the printer writes what it buffered.
  void done() {
    diags.finish();
    os.flush();
  }
  // The first error line ("error[ERR_...]: ..."), or the whole text when there is none.
  std::string firstLine() const;
};

struct ContractSourceOptions {
  std::string stdlibDir; // for the contracts' imports; empty: the driver's default
};

// The module of `source`, compiled for contract `name` only, and that contract in it. The source is
// read from memory as "<name>.msc", the name its diagnostics give it. nullopt with the diagnostics
// in `out` when the source does not compile, or (ERR_CLUSTER_007 in `out`) defines no contract `name`.
// `contractClass` (Submission::contractClass) is the class it takes without a class line of its own;
// one of its own that says otherwise is ERR_CLUSTER_023 in `out`.
struct LoadedContract {
  ir::Module module;
  size_t index = 0; // of the contract `name` in module.contracts
  const ir::Contract &contract() const { return module.contracts[index]; }
};
std::optional<LoadedContract> loadSubmittedContract(const std::string &name, const std::string &source,
                                                    const ContractSourceOptions &options, CapturedDiagnostics &out,
                                                    const std::string &contractClass = {});

} // namespace msc::cluster
