// `mscale-cli contract logs ID [--rank R] [--attempt N] [-f]`: what a contract's worker printed, as
// the node agent keeps it per rank and attempt (executor/WorkerOutput.h): the newest attempt of
// rank 0 by default; -f follows it like `tail -f`, and goes on to the next attempt when the worker
// is restarted, until the worker ends or Ctrl-C. `mscale-cli cluster logs` reads the same from the
// HTTP endpoint of the node that ran the rank (executor/client/LogsHttp.h).
#pragma once

#include "support/Diagnostic.h"

#include <cstdint>
#include <optional>
#include <string>

namespace msc::cli {

struct LogsViewOptions {
  std::string socket;
  std::string contract;
  unsigned rank = 0;
  std::optional<uint32_t> attempt; // none: the newest
  bool follow = false;
  // Read from this node's HTTP endpoint ("HOST:PORT") instead of the local socket: the node that
  // runs the job's rank `jobRank` as its one worker (`rank` 0 there). `node` names it in errors
  // (ERR_CLUSTER_015).
  std::string http = {}, node = {};
  unsigned jobRank = 0;
};

// 0, or 1 when the agent cannot answer or keeps no such output (ERR_EXEC_031).
int showLogs(const LogsViewOptions &options, DiagnosticEngine &diags);

} // namespace msc::cli
