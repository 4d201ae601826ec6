#include "render/TimelineSvg.h"

#include "render/Xml.h"
#include "support/Quantity.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <cmath>

namespace msc::render {

namespace {

// Distinct, light enough for black text, none of them the grey a caller uses for "kept".
constexpr const char *kPalette[] = {"#f28e2b", "#4e79a7", "#59a14f", "#e15759", "#76b7b2",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"};

std::string px(double v) { return llvm::formatv("{0:F1}", v).str(); }

// The step of the axis' ticks: 1, 2 or 5 times a power of ten, about eight ticks over `spanNs`.
uint64_t tickStep(uint64_t spanNs) {
  double raw = std::max(1.0, double(spanNs) / 8);
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw)
      return uint64_t(m * power);
  return uint64_t(10 * power);
}

} // namespace

void writeTimelineSvg(const TimelineChart &chart, llvm::raw_ostream &os) {
  TimelineLayout l;
  uint64_t start = chart.startNs, end = std::max(chart.endNs, chart.startNs + 1);
  double plotWidth = std::max(100.0, double(chart.width) - l.left - l.right);
  double height = l.top + l.laneHeight * double(chart.lanes.size()) + l.bottom;
  auto x = [&](uint64_t ns) {
    ns = std::clamp(ns, start, end);
    return l.left + plotWidth * double(ns - start) / double(end - start);
  };

  std::map<std::string, std::string> colours = chart.colours;
  std::vector<std::string> legend;
  size_t next = 0;
  for (const TimelineLane &lane : chart.lanes)
    for (const TimelineSpan &s : lane.spans) {
      if (std::find(legend.begin(), legend.end(), s.category) == legend.end())
        legend.push_back(s.category);
      if (!colours.count(s.category))
        colours[s.category] = kPalette[next++ % std::size(kPalette)];
    }

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << chart.width << "\" height=\"" << px(height)
     << "\" viewBox=\"0 0 " << chart.width << " " << px(height) << "\" data-left=\"" << px(l.left)
     << "\" data-top=\"" << px(l.top) << "\" data-lane-height=\"" << px(l.laneHeight) << "\" data-plot-width=\""
     << px(plotWidth) << "\" data-start-ns=\"" << start << "\" data-end-ns=\"" << end << "\""
     << " font-family=\"Verdana, sans-serif\" font-size=\"12\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  os << "<text x=\"" << px(l.left) << "\" y=\"20\" font-size=\"16\">" << xmlEscape(chart.title) << "</text>\n";
  if (!chart.subtitle.empty())
    os << "<text x=\"" << px(l.left) << "\" y=\"38\" fill=\"#555555\">" << xmlEscape(chart.subtitle) << "</text>\n";
  double lx = l.left;
  for (const std::string &c : legend) {
    os << "<g class=\"legend\"><rect x=\"" << px(lx) << "\" y=\"48\" width=\"12\" height=\"12\" fill=\""
       << colours[c] << "\"/><text x=\"" << px(lx + 16) << "\" y=\"58\">" << xmlEscape(c) << "</text></g>\n";
    lx += 16 + 7.5 * double(c.size()) + 18;
  }

  for (size_t i = 0; i < chart.lanes.size(); ++i) {
    const TimelineLane &lane = chart.lanes[i];
    double y = l.top + l.laneHeight * double(i);
    os << "<g class=\"lane\" data-name=\"" << xmlEscape(lane.name) << "\">\n";
    os << "<rect x=\"" << px(l.left) << "\" y=\"" << px(y) << "\" width=\"" << px(plotWidth) << "\" height=\""
       << px(l.laneHeight - 2) << "\" fill=\"" << (i % 2 ? "#f7f7f7" : "#efefef") << "\"/>\n";
    os << "<text x=\"" << px(l.left - 8) << "\" y=\"" << px(y + l.laneHeight - 8)
       << "\" text-anchor=\"end\">" << xmlEscape(lane.name) << "</text>\n";
    for (const TimelineSpan &s : lane.spans) {
      if (s.toNs <= start || s.fromNs >= end || s.toNs <= s.fromNs)
        continue;
      double x0 = x(s.fromNs), w = std::max(0.5, x(s.toNs) - x0);
      os << "<g class=\"span\" data-category=\"" << xmlEscape(s.category) << "\"><title>"
         << xmlEscape((s.label.empty() ? s.category : s.label) + ": from " + formatMeasuredNs(s.fromNs - start) +
                      " for " + formatMeasuredNs(s.toNs - s.fromNs))
         << "</title><rect x=\"" << px(x0) << "\" y=\"" << px(y) << "\" width=\"" << px(w) << "\" height=\""
         << px(l.laneHeight - 2) << "\" fill=\"" << colours[s.category] << "\"/>";
      // A label only where it fits (about 7 px a character).
      if (!s.label.empty() && w > 7.0 * double(s.label.size()) + 6)
        os << "<text x=\"" << px(x0 + 3) << "\" y=\"" << px(y + l.laneHeight - 8) << "\">" << xmlEscape(s.label)
           << "</text>";
      os << "</g>\n";
    }
    os << "</g>\n";
  }

  double axisY = l.top + l.laneHeight * double(chart.lanes.size()) + 4;
  os << "<line x1=\"" << px(l.left) << "\" y1=\"" << px(axisY) << "\" x2=\"" << px(l.left + plotWidth) << "\" y2=\""
     << px(axisY) << "\" stroke=\"#333333\"/>\n";
  uint64_t step = tickStep(end - start);
  for (uint64_t t = 0; start + t <= end; t += step) {
    double tx = x(start + t);
    os << "<line x1=\"" << px(tx) << "\" y1=\"" << px(axisY) << "\" x2=\"" << px(tx) << "\" y2=\"" << px(axisY + 5)
       << "\" stroke=\"#333333\"/><text x=\"" << px(tx) << "\" y=\"" << px(axisY + 18)
       << "\" text-anchor=\"middle\" fill=\"#333333\">" << xmlEscape(formatMeasuredNs(t)) << "</text>\n";
  }
  os << "</svg>\n";
}

} // namespace msc::render
