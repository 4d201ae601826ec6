// `mscale-cli contract status ID [--watch [--interval 2s] [--count N]] [--json]`: one status, or a
// view that redraws in place like top until Ctrl-C (or N refreshes), or JSON for scripts (one object
// per refresh, a line each, with --watch). A contract `mscale-exec run` holds is found in the node's
// ledger (executor/claims/NodeClaims.h) and said from there: who holds it, since when, its plan.
#pragma once

#include "support/Diagnostic.h"

#include <chrono>
#include <optional>
#include <string>

namespace msc::cli {

struct StatusViewOptions {
  std::string socket;
  std::string contract;
  bool json = false;
  bool watch = false;
  std::chrono::nanoseconds interval = std::chrono::seconds(2);
  std::optional<unsigned> count; // refreshes before exiting (watch); none: until SIGINT
  std::string claimsDir = {};    // the node's ledger (NodeClaims::dirFor): a contract a run holds is there
};

// The exit status: 0 (also after Ctrl-C in --watch), 1 when the agent cannot answer.
int showStatus(const StatusViewOptions &options, DiagnosticEngine &diags);

} // namespace msc::cli
