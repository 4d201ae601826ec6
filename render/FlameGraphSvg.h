// A flame graph as one self-contained SVG file: frames as <rect>s whose widths are their share of
// the calls, a <title> tooltip on each (calls, share, time), synchronising calls and implicit
// synchronisations in their own colours, and an inline script for click-to-zoom, reset and search.
// No external reference: the file opens in any browser, offline.
#pragma once

#include "render/FrameTree.h"

#include <llvm/Support/raw_ostream.h>

#include <string>

namespace msc::render {

struct FlameGraphOptions {
  std::string title = "CUDA calls";
  std::string subtitle;   // e.g. what was traced; empty: none
  unsigned width = 1200;  // pixels
  unsigned frameHeight = 16;
  unsigned fontSize = 12;
  // Frames narrower than this (and so everything above them) are left out, as flame-graph tools do:
  // a trace with many call sites would otherwise make a file of tens of MiB that browsers crawl
  // through. The subtitle says how many; speedscope's file keeps them all.
  double minFrameWidthPx = 0.1;
};

// Layout constants the script and the tests read back from the <svg> element's data-* attributes.
struct FlameGraphLayout {
  double xpad = 10;
  double top = 64;    // title, buttons and legend above the frames
  double bottom = 30; // the details line below them
};

void writeFlameGraphSvg(const FrameTree &tree, const FlameGraphOptions &options, llvm::raw_ostream &os);

// The fill of a frame: a colour from the kind's palette, varied by a hash of the name so that
// neighbours differ and the same name has the same colour in every graph. The palettes do not
// overlap (ordinary frames are red/orange/yellow, synchronising calls blue, implicit syncs purple).
std::string frameColour(llvm::StringRef name, FrameKind kind);

} // namespace msc::render
