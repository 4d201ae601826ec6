// The interposer path of a trace: no BPF and no privileges, a few ns per call. With a command, the
// command runs with libmscale_cuda_interposer.so preloaded and a fresh counters directory, which is
// read when it exits and then removed. Without one, the processes already publishing in
// options.countersDir (workers mscale-exec started with --cuda-counters) are read at the start and
// at the end of the window, and the difference is reported (a zero duration: read once, totals since
// each process started). Processes that run without the
// interposer are the uprobe path's (TraceSession).
#pragma once

#include "bpf/TraceSession.h"

namespace msc::trace {

std::optional<TraceResults> runInterposerTrace(const TraceOptions &options, DiagnosticEngine &diags,
                                               const std::function<bool()> &stop = {});

} // namespace msc::trace
