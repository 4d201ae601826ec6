// What a trace will attach to, settled before any BPF is loaded: whether this process may trace,
// whom it traces, which CUDA libraries those use and where in them each probe goes. Reads procfs,
// sysfs and ELF files only. Internal to msc_bpf: the phases TraceSession::start runs first.
#pragma once

#include "bpf/CudaFunctions.h"
#include "bpf/ElfFile.h"
#include "bpf/TraceSession.h"

#include <optional>
#include <string>
#include <vector>

namespace msc::trace {

// A traced function and the place in its library where its two probes (entry, return) go.
struct ResolvedFunction {
  const CudaFunction *fn;
  std::string library;
  AttachPoint point;
};

// Filled in by the phases below, in their order.
struct TraceTargets {
  std::optional<std::string> commandPath; // options.command[0] found through PATH; none without a command
  std::string library;                    // libcuda
  std::string runtimeLibrary;             // libcudart; empty where no target maps it
  std::vector<ResolvedFunction> functions;
};

// Each phase reports why tracing is impossible and returns false, or returns true.

// Privileges and kernel BTF, unless options.preflight is off: ERR_TRACE_001/002.
bool checkMachineAllowsTracing(const TraceOptions &options, DiagnosticEngine &diags);
// The pids, the cgroup and the command exist: ERR_TRACE_004/005/012.
bool checkWhomToTrace(const TraceOptions &options, TraceTargets &targets, DiagnosticEngine &diags);
// libcuda (required) and libcudart: as given, else mapped by a target process, else on disk: ERR_TRACE_007.
bool findCudaLibraries(const TraceOptions &options, TraceTargets &targets, DiagnosticEngine &diags);
// Each traced function's probe offset in those libraries: ERR_TRACE_008/009, WRN_TRACE_002.
bool resolveAttachPoints(const TraceOptions &options, TraceTargets &targets, DiagnosticEngine &diags);

} // namespace msc::trace
