// The call counters that the CUDA interposer (interposer/, preloaded into a process) publishes in a
// directory, one file per process: read, summed over threads and processes, and subtracted, so a
// trace over a time window of long-running workers reports only that window.
#pragma once

#include "bpf/TraceResults.h"
#include "support/Diagnostic.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace msc::trace {

struct CounterReading {
  // Per process that has a file, its functions by CudaFunction id (every counted function of the
  // table, calls or not).
  struct Process {
    std::string comm;
    std::map<uint32_t, FunctionStats> functions;
  };
  std::map<int, Process> processes;
};

// Reads every "<pid>.counters" file of `dir`; only the pids in `pids` when it is not empty. A file
// that is not a counters file (or is still being created) is skipped with WRN_TRACE_004; a
// directory that cannot be read is ERR_TRACE_013.
std::optional<CounterReading> readCounters(const std::string &dir, const std::vector<int> &pids,
                                           DiagnosticEngine &diags);

// What happened between `before` and `after`: processes that are only in `after` count from zero.
CounterReading subtract(const CounterReading &after, const CounterReading &before);

// The reading in the uprobe path's report form: functions summed over processes, in table order,
// mechanism "interposer", `library` the interposer's path; the runtime's functions only when called.
void fillResults(const CounterReading &reading, const std::string &library, TraceResults &results);

} // namespace msc::trace
