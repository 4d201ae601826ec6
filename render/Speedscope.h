// The speedscope file format (https://www.speedscope.app/file-format-schema.json), "sampled"
// profiles: one sample per distinct stack, weighted by its calls, and a second profile weighted by
// time when the input measured it. The speedscope viewer then gives the time-ordered, left-heavy and
// sandwich views of the same calls.
#pragma once

#include "render/FoldedStacks.h"

#include <llvm/Support/raw_ostream.h>

#include <string>

namespace msc::render {

inline constexpr llvm::StringLiteral kSpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json";

struct SpeedscopeOptions {
  std::string name = "CUDA calls"; // the profile group's name
};

// Frames are shared between the profiles; an implicit synchronisation's leaf is its own frame,
// named "<call> [implicit sync]", so the viewer's sandwich view can single it out.
void writeSpeedscope(const FoldedProfile &profile, const SpeedscopeOptions &options, llvm::raw_ostream &os);

} // namespace msc::render
