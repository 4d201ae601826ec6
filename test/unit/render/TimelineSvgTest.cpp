// A timeline SVG: one lane per row with its spans where their times say, clipped to the window,
// coloured by category (a caller's colour or the palette's, the same category the same colour), a
// legend entry per category, tooltips, escaped text, and an axis. Parsed back as XML.
#include "render/TimelineSvg.h"

#include <gtest/gtest.h>

#include <regex>

namespace msc::render {
namespace {

constexpr uint64_t kMs = 1'000'000;

std::string render(const TimelineChart &chart) {
  std::string out;
  llvm::raw_string_ostream os(out);
  writeTimelineSvg(chart, os);
  os.flush();
  return out;
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TimelineChart twoLanes() {
  TimelineChart c;
  c.title = "node jwb0004: phases & loans";
  c.startNs = 100 * kMs;
  c.endNs = 200 * kMs;
  c.width = 1210; // a plot of 1000 px: 10 px a ms
  c.colours["kept"] = "#bbbbbb";
  c.lanes.push_back({"train <phase>", {{100 * kMs, 150 * kMs, "decode", "decode"}, {150 * kMs, 200 * kMs, "compute", "compute"}}});
  c.lanes.push_back({"CPU 18", {{50 * kMs, 120 * kMs, "kept", ""}, {120 * kMs, 260 * kMs, "prep", "lent to prep"}}});
  return c;
}

TEST(TimelineSvg, SpansAreWhereTheirTimesSayAndClippedToTheWindow) {
  std::string svg = render(twoLanes());
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<g class=\"lane\""), 2u);
  EXPECT_EQ(count(svg, "<g class=\"span\""), 4u);
  // decode: 0..50 ms of the window at 10 px a ms, from the plot's left edge (190).
  EXPECT_NE(svg.find("<rect x=\"190.0\" y=\"70.0\" width=\"500.0\""), std::string::npos) << svg;
  // CPU 18 kept from before the window: drawn from its start; lent past its end: drawn to its end.
  EXPECT_NE(svg.find("<rect x=\"190.0\" y=\"92.0\" width=\"200.0\" height=\"20.0\" fill=\"#bbbbbb\""),
            std::string::npos);
  EXPECT_NE(svg.find("<rect x=\"390.0\" y=\"92.0\" width=\"800.0\""), std::string::npos);
  EXPECT_NE(svg.find("<title>lent to prep: from 20.00 ms for 140.00 ms</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("node jwb0004: phases &amp; loans"), std::string::npos);
  EXPECT_NE(svg.find("train &lt;phase&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">40.00 ms</text>"), std::string::npos) << "an axis tick every 20 ms (1, 2 or 5 x 10^n)";
  EXPECT_EQ(svg.find(">50.00 ms</text>"), std::string::npos);
}

TEST(TimelineSvg, EachCategoryHasOneColourAndOneLegendEntry) {
  TimelineChart c = twoLanes();
  c.lanes.push_back({"CPU 19", {{100 * kMs, 200 * kMs, "prep", "lent to prep"}}});
  std::string svg = render(c);
  EXPECT_EQ(count(svg, "<g class=\"legend\""), 4u) << "decode, compute, kept, prep";
  std::smatch m;
  std::string fillOfPrep;
  std::regex span("data-category=\"prep\"><title>[^<]*</title><rect [^>]*fill=\"(#[0-9a-f]{6})\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), span); it != std::sregex_iterator(); ++it) {
    if (fillOfPrep.empty())
      fillOfPrep = (*it)[1];
    EXPECT_EQ((*it)[1], fillOfPrep) << "one category, one colour";
  }
  EXPECT_FALSE(fillOfPrep.empty());
  EXPECT_NE(fillOfPrep, "#bbbbbb");
  EXPECT_EQ(render(c), svg) << "the same chart renders the same";
}

TEST(TimelineSvg, AnEmptyOrZeroLengthChartIsStillAPicture) {
  TimelineChart c;
  c.title = "nothing lent";
  c.startNs = c.endNs = 5 * kMs;
  c.lanes.push_back({"CPU 0", {{5 * kMs, 5 * kMs, "kept", ""}}});
  std::string svg = render(c);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "<g class=\"span\""), 0u) << "a span of no time is not drawn";
}

} // namespace
} // namespace msc::render
