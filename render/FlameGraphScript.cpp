#include "render/FlameGraphScript.h"

namespace msc::render {

// Each frame is <g class="frame KIND" data-depth data-count><title>NAME\n...</title><rect/><text/></g>.
// Zooming into a frame stretches the frames inside its span (and at or above its depth) to the full
// width, dims its ancestors and hides the rest; the original geometry stays in the elements, so a
// reset restores it exactly. Search takes a regular expression, colours the matching frames and
// prints the share of the calls under them (overlapping matches counted once).
llvm::StringRef flameGraphScript() {
  return R"JS("use strict";
(function () {
  var svg = document.documentElement;
  var xpad = +svg.getAttribute("data-xpad");
  var plotWidth = +svg.getAttribute("data-plot-width");
  var charWidth = 0.6 * +svg.getAttribute("data-font-size");
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.frame"));
  var unzoom = document.getElementById("unzoom");
  var details = document.getElementById("details");
  var matched = document.getElementById("matched");
  var searchButton = document.getElementById("search");
  var eps = 1e-6;
  frames.forEach(function (g) {
    var r = g.querySelector("rect");
    var title = g.querySelector("title").textContent.split("\n");
    g.ox = +r.getAttribute("x");
    g.ow = +r.getAttribute("width");
    g.depth = +g.getAttribute("data-depth");
    g.frameName = title[0];
    g.summary = title.slice(1).join("; ");
    g.fill = r.getAttribute("fill");
    g.addEventListener("click", function () { zoom(g); });
    g.addEventListener("mouseover", function () { details.textContent = g.frameName + " (" + g.summary + ")"; });
    g.addEventListener("mouseout", function () { details.textContent = " "; });
  });
  function place(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    r.setAttribute("x", x.toFixed(3));
    r.setAttribute("width", w.toFixed(3));
    t.setAttribute("x", (x + 3).toFixed(3));
    var fits = w > 6 ? Math.floor((w - 6) / charWidth) : 0;
    var n = g.frameName;
    t.textContent = fits < 3 ? "" : (n.length <= fits ? n : n.substring(0, fits - 2) + "..");
  }
  function zoom(target) {
    var x0 = target.ox, w0 = target.ow, scale = plotWidth / w0;
    frames.forEach(function (g) {
      var inside = g.ox >= x0 - eps && g.ox + g.ow <= x0 + w0 + eps;
      var encloses = g.ox <= x0 + eps && g.ox + g.ow >= x0 + w0 - eps;
      g.classList.remove("hidden");
      g.classList.remove("parent");
      if (g.depth >= target.depth && inside) {
        place(g, xpad + (g.ox - x0) * scale, g.ow * scale);
      } else if (g.depth < target.depth && encloses) {
        g.classList.add("parent");
        place(g, xpad, plotWidth);
      } else {
        g.classList.add("hidden");
      }
    });
    unzoom.classList.remove("hidden");
  }
  function reset() {
    frames.forEach(function (g) {
      g.classList.remove("hidden");
      g.classList.remove("parent");
      place(g, g.ox, g.ow);
    });
    unzoom.classList.add("hidden");
  }
  function search(pattern) {
    var re;
    try { re = new RegExp(pattern); } catch (e) { matched.textContent = "bad pattern: " + e.message; return; }
    var spans = [];
    frames.forEach(function (g) {
      var hit = pattern !== "" && re.test(g.frameName);
      g.querySelector("rect").setAttribute("fill", hit ? "rgb(230,0,230)" : g.fill);
      if (hit) spans.push([g.ox, g.ox + g.ow]);
    });
    if (pattern === "") { matched.textContent = ""; searchButton.textContent = "Search"; return; }
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    matched.textContent = "Matched: " + (100 * covered / plotWidth).toFixed(2) + "% of the calls";
    searchButton.textContent = "Clear search";
  }
  unzoom.addEventListener("click", reset);
  searchButton.addEventListener("click", function () {
    if (searchButton.textContent !== "Search") { search(""); return; }
    var p = window.prompt("Search frames (regular expression)", "");
    if (p !== null) search(p);
  });
  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); searchButton.dispatchEvent(new Event("click")); }
    else if (e.key === "Escape") { search(""); reset(); }
  });
  // Deep links: #search=REGEX and #zoom=N (the N-th frame in document order) open in that state.
  var hash = decodeURIComponent(window.location.hash.substring(1));
  hash.split("&").forEach(function (kv) {
    var i = kv.indexOf("=");
    if (i < 0) return;
    var k = kv.substring(0, i), v = kv.substring(i + 1);
    if (k === "search") search(v);
    if (k === "zoom" && frames[+v]) zoom(frames[+v]);
  });
})();
)JS";
}

} // namespace msc::render
