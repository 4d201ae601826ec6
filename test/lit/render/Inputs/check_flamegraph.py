#!/usr/bin/env python3
"""Checks a flame graph SVG written by mscale-trace against the folded stacks it was drawn from.

check_flamegraph.py SVG FOLDED [--sync NAME]...

The expected picture is computed here, independently of the C++ writer: the folded stacks merged
into a tree (siblings sorted by name, then kind), each frame's width its share of the calls.
Checks: the file is well-formed XML; one <g class="frame KIND"> per tree node (and "all"); every
frame's depth, name, count, x and width as expected (widths proportional to counts); synchronising
calls and implicit synchronisations coloured from palettes no ordinary frame uses; the script is
inline and nothing is loaded from outside. Prints what it checked; exits 1 with the first mismatch.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
KIND_ORDER = {"ordinary": 0, "sync": 1, "implicit-sync": 2}
SUFFIX = "_[implicit-sync]"


def fail(msg):
    print("check_flamegraph: " + msg)
    sys.exit(1)


def expected_frames(folded, sync_names, plot_width, xpad):
    tree = {"count": 0, "children": {}}
    total = 0
    for line in open(folded):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        count = int(count)
        total += count
        frames = stack.split(";")
        implicit = frames[-1].endswith(SUFFIX)
        if implicit:
            frames[-1] = frames[-1][: -len(SUFFIX)]
        node = tree
        node["count"] += count
        for i, f in enumerate(frames):
            kind = "ordinary"
            if i == len(frames) - 1:
                kind = "implicit-sync" if implicit else ("sync" if f in sync_names else "ordinary")
            node = node["children"].setdefault((f, KIND_ORDER[kind], kind), {"count": 0, "children": {}})
            node["count"] += count
    out = []

    def walk(name, kind, node, depth, x):
        w = plot_width * node["count"] / total
        out.append((depth, name, kind, node["count"], x, w))
        cx = x
        for key in sorted(node["children"]):
            child = node["children"][key]
            walk(key[0], key[2], child, depth + 1, cx)
            cx += plot_width * child["count"] / total

    walk("all", "ordinary", tree, 0, xpad)
    return out, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("svg")
    ap.add_argument("folded")
    ap.add_argument("--sync", action="append", default=[])
    args = ap.parse_args()
    try:
        root = ET.parse(args.svg).getroot()
    except ET.ParseError as e:
        fail("not well-formed XML: %s" % e)
    if root.tag != NS + "svg":
        fail("root element is %s, not svg" % root.tag)
    plot_width = float(root.get("data-plot-width"))
    xpad = float(root.get("data-xpad"))
    expected, total = expected_frames(args.folded, set(args.sync), plot_width, xpad)
    if int(root.get("data-total")) != total:
        fail("data-total %s, expected %d" % (root.get("data-total"), total))

    got = []
    fills = {"ordinary": set(), "sync": set(), "implicit-sync": set()}
    for g in root.iter(NS + "g"):
        classes = (g.get("class") or "").split()
        if "frame" not in classes:
            continue
        kind = [c for c in classes if c != "frame"][0]
        title = g.find(NS + "title").text
        rect = g.find(NS + "rect")
        count = int(g.get("data-count"))
        if not re.search(r"\ncalls: %d \(" % count, title):
            fail("tooltip of %r does not say 'calls: %d': %r" % (title.split("\n")[0], count, title))
        if "\ntime: " not in title:
            fail("tooltip of %r has no time line" % title.split("\n")[0])
        got.append((int(g.get("data-depth")), title.split("\n")[0], kind, count,
                    float(rect.get("x")), float(rect.get("width"))))
        fills[kind].add(rect.get("fill"))

    if len(got) != len(expected):
        fail("%d frames, expected %d" % (len(got), len(expected)))
    # Document order is the writer's traversal; compare as sorted lists so the order is not the test.
    key = lambda f: (f[0], f[4], f[1], f[2])
    for g, e in zip(sorted(got, key=key), sorted(expected, key=key)):
        if g[:4] != e[:4] or abs(g[4] - e[4]) > 0.002 or abs(g[5] - e[5]) > 0.002:
            fail("frame %r: got depth/name/kind/count/x/width %r, expected %r" % (e[1], g, e))
        if abs(g[5] - plot_width * g[3] / total) > 0.002:
            fail("frame %r: width %.3f is not proportional to %d calls" % (g[1], g[5], g[3]))

    for kind in ("sync", "implicit-sync"):
        if fills[kind] & fills["ordinary"]:
            fail("%s frames share colours with ordinary frames: %r" % (kind, fills[kind] & fills["ordinary"]))
    if fills["sync"] & fills["implicit-sync"]:
        fail("sync and implicit-sync frames share colours")

    scripts = list(root.iter(NS + "script"))
    if len(scripts) != 1 or "function zoom" not in (scripts[0].text or ""):
        fail("expected one inline script with zoom")
    for el in root.iter():
        for attr, value in el.attrib.items():
            if attr.endswith("href") or attr == "src":
                fail("external reference %s=%r" % (attr, value))

    kinds = {k: sum(1 for f in got if f[2] == k) for k in fills}
    print("flamegraph ok: %d frames (%d sync, %d implicit-sync), %d calls, widths proportional"
          % (len(got), kinds["sync"], kinds["implicit-sync"], total))


if __name__ == "__main__":
    main()
