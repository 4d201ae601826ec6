#include "render/FlameGraphSvg.h"

#include "render/FlameGraphScript.h"
#include "render/Xml.h"
#include "support/Quantity.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/xxhash.h>

#include <cstring>

namespace msc::render {

namespace {

// Coordinates with at most three decimals (raw_ostream prints a double in exponent form).
std::string px(double v) {
  std::string out = llvm::formatv("{0:F3}", v).str();
  while (out.back() == '0')
    out.pop_back();
  if (out.back() == '.')
    out.pop_back();
  return out;
}

llvm::StringRef kindTitle(FrameKind kind) {
  switch (kind) {
  case FrameKind::Ordinary: return "";
  case FrameKind::Sync: return "synchronising call: the host waits for the device";
  case FrameKind::ImplicitSync: return "implicit synchronisation: an asynchronous call that waited for the device";
  }
  return "";
}

class Writer {
public:
  Writer(const FrameTree &tree, const FlameGraphOptions &options, llvm::raw_ostream &os)
      : tree_(tree), opt_(options), os_(os) {
    plotWidth_ = double(opt_.width) - 2 * layout_.xpad;
    height_ = layout_.top + double(tree_.depth + 1) * opt_.frameHeight + layout_.bottom;
  }

  void write() {
    uint64_t total = tree_.root.count;
    os_ << "<?xml version=\"1.0\" standalone=\"no\"?>\n"
        << "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << opt_.width << "\" height=\""
        << llvm::format("%.0f", height_) << "\" viewBox=\"0 0 " << opt_.width << " " << llvm::format("%.0f", height_)
        << "\" data-xpad=\"" << px(layout_.xpad) << "\" data-plot-width=\"" << llvm::format("%.3f", plotWidth_)
        << "\" data-total=\"" << total << "\" data-font-size=\"" << opt_.fontSize << "\" data-has-times=\""
        << (tree_.hasTimes ? 1 : 0) << "\">\n";
    os_ << "<style>\n"
           "text { font-family: monospace; fill: #000; }\n"
           ".frame text { font-size: " << opt_.fontSize << "px; pointer-events: none; }\n"
           ".frame:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
           ".parent { opacity: 0.5; }\n"
           ".hidden { display: none; }\n"
           ".button { cursor: pointer; fill: #333; }\n"
           ".button:hover { text-decoration: underline; }\n"
           "</style>\n";
    os_ << "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f8f8f2\"/>\n";
    os_ << "<text x=\"" << opt_.width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"17\">"
        << xmlEscape(opt_.title) << "</text>\n";
    std::string sub = opt_.subtitle.empty() ? "" : opt_.subtitle + "; ";
    sub += std::to_string(total) + " calls; width = share of the calls";
    if (tree_.hasTimes)
      sub += ", " + formatMeasuredNs(tree_.root.ns) + " in them";
    if (size_t omitted = countNarrow(tree_.root, 0))
      sub += "; " + std::to_string(omitted) + " frames narrower than " + px(opt_.minFrameWidthPx) +
             " px not drawn";
    os_ << "<text x=\"" << opt_.width / 2 << "\" y=\"38\" text-anchor=\"middle\" font-size=\"12\">"
        << xmlEscape(sub) << "</text>\n";
    os_ << "<text id=\"unzoom\" class=\"button hidden\" x=\"" << px(layout_.xpad) << "\" y=\"22\" font-size=\"12\">"
        << "Reset zoom</text>\n";
    os_ << "<text id=\"search\" class=\"button\" x=\"" << px(opt_.width - layout_.xpad)
        << "\" y=\"22\" text-anchor=\"end\" font-size=\"12\">Search</text>\n";
    os_ << "<text id=\"matched\" x=\"" << px(opt_.width - layout_.xpad) << "\" y=\"" << llvm::format("%.0f", height_ - 10)
        << "\" text-anchor=\"end\" font-size=\"12\"></text>\n";
    os_ << "<text id=\"details\" x=\"" << px(layout_.xpad) << "\" y=\"" << llvm::format("%.0f", height_ - 10)
        << "\" font-size=\"12\"> </text>\n";
    writeLegend();
    os_ << "<g id=\"frames\">\n";
    writeFrame(tree_.root, 0, layout_.xpad);
    os_ << "</g>\n";
    os_ << "<script type=\"text/ecmascript\"><![CDATA[\n" << flameGraphScript() << "]]></script>\n";
    os_ << "</svg>\n";
  }

private:
  void writeLegend() {
    struct Entry {
      FrameKind kind;
      const char *label;
      const char *sample;
    } entries[] = {{FrameKind::Ordinary, "frame", "frame"},
                   {FrameKind::Sync, "synchronising call", "cuStreamSynchronize"},
                   {FrameKind::ImplicitSync, "implicit synchronisation", "cuMemcpyAsync"}};
    double x = layout_.xpad;
    os_ << "<g id=\"legend\">\n";
    for (const Entry &e : entries) {
      os_ << "<rect class=\"legend " << frameKindName(e.kind) << "\" x=\"" << px(x) << "\" y=\"46\" width=\"12\" height=\"10\" fill=\""
          << frameColour(e.sample, e.kind) << "\"/>\n";
      os_ << "<text x=\"" << px(x + 16) << "\" y=\"55\" font-size=\"11\">" << e.label << "</text>\n";
      x += 30 + 7 * std::strlen(e.label);
    }
    os_ << "</g>\n";
  }

  double widthOf(const FrameNode &node) const {
    uint64_t total = tree_.root.count;
    return total ? plotWidth_ * double(node.count) / double(total) : plotWidth_;
  }

  // Frames left out: a narrow frame and every frame above it (none is wider than its caller).
  size_t countNarrow(const FrameNode &node, unsigned depth) const {
    if (depth > 0 && widthOf(node) < opt_.minFrameWidthPx)
      return 1 + countAbove(node);
    size_t n = 0;
    for (const auto &[key, child] : node.children)
      n += countNarrow(*child, depth + 1);
    return n;
  }
  static size_t countAbove(const FrameNode &node) {
    size_t n = 0;
    for (const auto &[key, child] : node.children)
      n += 1 + countAbove(*child);
    return n;
  }

  void writeFrame(const FrameNode &node, unsigned depth, double x) {
    uint64_t total = tree_.root.count;
    double w = widthOf(node);
    if (depth > 0 && w < opt_.minFrameWidthPx)
      return;
    double y = height_ - layout_.bottom - double(depth + 1) * opt_.frameHeight;
    std::string title = node.name;
    if (node.kind != FrameKind::Ordinary)
      title += "\n" + kindTitle(node.kind).str();
    title += "\ncalls: " + std::to_string(node.count);
    if (total)
      title += llvm::formatv(" ({0:F2}% of all)", 100.0 * double(node.count) / double(total)).str();
    if (tree_.hasTimes) {
      title += "\ntime: " + formatMeasuredNs(node.ns);
      if (node.count)
        title += ", mean " + formatMeasuredNs(node.ns / node.count) + " per call";
    } else {
      title += "\ntime: not recorded in the folded input";
    }
    os_ << "<g class=\"frame " << frameKindName(node.kind) << "\" data-depth=\"" << depth << "\" data-count=\""
        << node.count << "\"";
    if (tree_.hasTimes)
      os_ << " data-ns=\"" << node.ns << "\"";
    os_ << "><title>" << xmlEscape(title) << "</title><rect x=\"" << llvm::format("%.3f", x) << "\" y=\""
        << llvm::format("%.0f", y) << "\" width=\"" << llvm::format("%.3f", w) << "\" height=\""
        << opt_.frameHeight - 1 << "\" rx=\"2\" fill=\"" << frameColour(node.name, node.kind) << "\"/><text x=\""
        << llvm::format("%.3f", x + 3) << "\" y=\"" << llvm::format("%.0f", y + opt_.frameHeight - 4) << "\">"
        << xmlEscape(label(node.name, w)) << "</text></g>\n";
    double childX = x;
    for (const auto &[key, child] : node.children) {
      writeFrame(*child, depth + 1, childX);
      childX += total ? plotWidth_ * double(child->count) / double(total) : 0;
    }
  }

  // What fits in `w` pixels: the name, or its start and "..", or nothing (the tooltip still has it).
  std::string label(llvm::StringRef name, double w) const {
    double charWidth = 0.6 * opt_.fontSize;
    size_t fits = w > 6 ? static_cast<size_t>((w - 6) / charWidth) : 0;
    if (fits < 3)
      return "";
    if (name.size() <= fits)
      return name.str();
    return name.take_front(fits - 2).str() + "..";
  }

  const FrameTree &tree_;
  const FlameGraphOptions &opt_;
  llvm::raw_ostream &os_;
  FlameGraphLayout layout_;
  double plotWidth_ = 0, height_ = 0;
};

} // namespace

std::string frameColour(llvm::StringRef name, FrameKind kind) {
  uint64_t h = llvm::xxHash64(name); // stable across runs: a function keeps its colour
  double v1 = double(h & 0xffff) / 65536.0, v2 = double((h >> 16) & 0xffff) / 65536.0,
         v3 = double((h >> 32) & 0xffff) / 65536.0;
  int r = 0, g = 0, b = 0;
  switch (kind) {
  case FrameKind::Ordinary: // "hot": r 205..254, g 0..229, b 0..54
    r = 205 + int(50 * v3), g = int(230 * v1), b = int(55 * v2);
    break;
  case FrameKind::Sync: // blue: r 80..119, g 150..189, b 220..254
    r = 80 + int(40 * v1), g = 150 + int(40 * v2), b = 220 + int(35 * v3);
    break;
  case FrameKind::ImplicitSync: // purple: r 150..189, g 50..79, b 200..229
    r = 150 + int(40 * v1), g = 50 + int(30 * v2), b = 200 + int(30 * v3);
    break;
  }
  return "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(b) + ")";
}

void writeFlameGraphSvg(const FrameTree &tree, const FlameGraphOptions &options, llvm::raw_ostream &os) {
  Writer(tree, options, os).write();
}

} // namespace msc::render
