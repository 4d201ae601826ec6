// How a command group (topology, hardware, contract, ...) plugs into mscale-cli: a file defines
// its llvm::cl::SubCommand and options, and registers a run function with a static Registration.
// main() parses the command line and runs the group whose subcommand was given.
#pragma once

#include "hal/Topology.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace msc::cli {

struct CommandGroup {
  llvm::cl::SubCommand *sub;
  std::function<int()> run; // exit status: 0 ok, 1 diagnostics, 2 usage
};

std::vector<CommandGroup> &commandGroups();

struct Registration {
  Registration(llvm::cl::SubCommand &sub, std::function<int()> run) { commandGroups().push_back({&sub, std::move(run)}); }
};

// The diagnostics of one run: text on stderr, with a SourceMgr so YAML errors get carets.
struct Diagnostics {
  Diagnostics();
  ~Diagnostics();
  DiagnosticEngine &engine();
  llvm::SourceMgr &sourceMgr(); // where files the engine reports on are loaded (contracts, YAML)

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --topology FILE (hwloc XML, YAML, "live"), --sysfs-root DIR, or the live machine when neither is given.
std::optional<hal::Topology> loadTopologyFromOptions(llvm::StringRef input, llvm::StringRef sysfsRoot,
                                                     llvm::StringRef node, DiagnosticEngine &diags);

} // namespace msc::cli
