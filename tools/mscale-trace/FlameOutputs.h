// mscale-trace's flame-graph outputs (--flamegraph SVG, --speedscope JSON), from a live trace or
// from a folded file (`mscale-trace render --folded FILE`): a trace's folded stacks with their time
// and its implicit synchronisations become a render::FoldedProfile, which msc_render draws.
#pragma once

#include "bpf/TraceResults.h"
#include "render/FoldedStacks.h"
#include "support/Diagnostic.h"

#include <string>

namespace msc::tracetool {

struct FlameOutputs {
  std::string svgPath;       // --flamegraph; empty: none
  std::string speedscopePath; // --speedscope; empty: none
  std::string title = "CUDA calls";
  std::string subtitle;
  bool any() const { return !svgPath.empty() || !speedscopePath.empty(); }
};

// The trace's folded stacks, each with its summed latency and marked when it is the call site of an
// implicit synchronisation the trace found.
render::FoldedProfile foldedProfileOf(const trace::TraceResults &results);

// Writes the requested files; false (with ERR_DRV_004 reported) when one cannot be written.
bool writeFlameOutputs(const render::FoldedProfile &profile, const FlameOutputs &outputs, DiagnosticEngine &diags);

// `mscale-trace render`: reads a folded file (ERR_DRV_001 when it cannot, ERR_RENDER_001 at the first
// malformed line) and writes the outputs. Returns the tool's exit status.
int renderFoldedFile(const std::string &foldedPath, const FlameOutputs &outputs, DiagnosticEngine &diags);

} // namespace msc::tracetool
