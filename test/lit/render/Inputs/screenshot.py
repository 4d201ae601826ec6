#!/usr/bin/env python3
"""Proves a flame graph SVG renders in a real browser: headless chromium screenshots it twice,
as opened and zoomed into one frame through the #zoom=N deep link (which only the inline script
handles), and the PNGs are checked with PIL.

screenshot.py CHROMIUM SVG FRAME_NAME OUT_PREFIX

Checks: the picture is not blank (many colours, most of the frame area painted); pixels of the
ordinary, synchronising and implicit-sync palettes are all present; after the zoom, FRAME_NAME's
row is painted in its colour across the whole width (it was not before), so the script ran.
"""
import subprocess
import sys
import xml.etree.ElementTree as ET

from PIL import Image

NS = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("screenshot: " + msg)
    sys.exit(1)


def shoot(chromium, url, png, width, height):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", "--window-size=%d,%d" % (width, height), "--screenshot=" + png, url]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if r.returncode != 0:
        fail("chromium exited %d: %s" % (r.returncode, r.stdout.decode(errors="replace")[-2000:]))
    return Image.open(png).convert("RGB")


def rgb(fill):
    return tuple(int(v) for v in fill[4:-1].split(","))


def near(a, b, tol=3):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def main():
    chromium, svg_path, frame_name, out = sys.argv[1:5]
    root = ET.parse(svg_path).getroot()
    width, height = int(root.get("width")), int(root.get("height"))
    frames = [g for g in root.iter(NS + "g") if "frame" in (g.get("class") or "").split()]
    index = next((i for i, g in enumerate(frames) if g.find(NS + "title").text.split("\n")[0] == frame_name), None)
    if index is None:
        fail("no frame named %r" % frame_name)
    rect = frames[index].find(NS + "rect")
    fill = rgb(rect.get("fill"))
    row_y = int(float(rect.get("y"))) + 7
    right_x = width - 15  # inside the plot, at its right end

    url = "file://" + svg_path
    plain = shoot(chromium, url, out + ".png", width, height)
    if plain.size != (width, height):
        fail("screenshot is %r, expected %r" % (plain.size, (width, height)))
    pixels = list(plain.getdata())
    colours = len(set(pixels))
    background = max(set(pixels), key=pixels.count)
    painted = sum(1 for p in pixels if p != background) / len(pixels)
    if colours < 20 or painted < 0.15:
        fail("blank-looking screenshot: %d colours, %.1f%% painted" % (colours, 100 * painted))
    hot = sum(1 for r, g, b in pixels if r >= 205 and b <= 54)
    sync = sum(1 for r, g, b in pixels if 80 <= r <= 119 and 150 <= g <= 189 and b >= 220)
    implicit = sum(1 for r, g, b in pixels if 150 <= r <= 189 and 50 <= g <= 79 and 200 <= b <= 229)
    if min(hot, sync, implicit) < 50:
        fail("palettes missing: %d ordinary, %d sync, %d implicit-sync pixels" % (hot, sync, implicit))
    if near(plain.getpixel((right_x, row_y)), fill):
        fail("frame %r already spans the width before zooming; pick a narrower frame" % frame_name)

    zoomed = shoot(chromium, url + "#zoom=%d" % index, out + "-zoom.png", width, height)
    if not near(zoomed.getpixel((right_x, row_y)), fill):
        fail("after #zoom=%d the right end of %r's row is %r, not its colour %r: the script did not zoom"
             % (index, frame_name, zoomed.getpixel((right_x, row_y)), fill))
    print("screenshot ok: %d colours, %.0f%% painted, palettes %d/%d/%d px, zoom into %r spans the width"
          % (colours, 100 * painted, hot, sync, implicit, frame_name))


if __name__ == "__main__":
    main()
