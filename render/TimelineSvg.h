// A timeline as one self-contained SVG file (no script, no external reference): lanes one under
// the other, each a row of spans coloured by category, a time axis below and a legend of the
// categories above; each span has a <title> tooltip (its label, start and length). Generic, like the
// flame graph: a node's phases and loans (`mscale-cli node loans --timeline`) are one use.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::render {

struct TimelineSpan {
  uint64_t fromNs = 0, toNs = 0; // clipped to the chart's window when drawn
  std::string category;          // its colour and legend entry
  std::string label;             // written in the span where it fits, and in its tooltip
};

struct TimelineLane {
  std::string name;
  std::vector<TimelineSpan> spans;
};

struct TimelineChart {
  std::string title;
  std::string subtitle; // empty: none
  uint64_t startNs = 0, endNs = 0;
  std::vector<TimelineLane> lanes;
  // Categories drawn in a colour of the caller's ("#rrggbb"); the others get the palette's colours
  // in the order they first appear, so the same chart always looks the same.
  std::map<std::string, std::string> colours;
  unsigned width = 1200; // pixels
};

// Geometry the tests read back from the <svg> element's data-* attributes.
struct TimelineLayout {
  double left = 190;    // lane names
  double right = 20;
  double top = 70;      // title, subtitle, legend
  double laneHeight = 22;
  double bottom = 40;   // the time axis
};

void writeTimelineSvg(const TimelineChart &chart, llvm::raw_ostream &os);

} // namespace msc::render
