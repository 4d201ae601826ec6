// The flame graph's inline script (click to zoom, reset, search, details on hover), kept apart from
// the SVG writer so each can be read alone. Plain ES5 without libraries: the SVG stays self-contained.
#pragma once

#include <llvm/ADT/StringRef.h>

namespace msc::render {

llvm::StringRef flameGraphScript();

} // namespace msc::render
