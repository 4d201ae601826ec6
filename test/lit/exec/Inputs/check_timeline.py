# Checks a node's lending timeline (mscale-cli node loans --timeline) as a person would see it: the
# SVG's lanes and spans parsed back, then, where Debian's chromium is installed, a headless
# screenshot in which the lent span's colour and the kept grey are both painted.
#
#   check_timeline.py SVG OUT_PREFIX
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
svg, out = sys.argv[1:3]
root = ET.parse(svg).getroot()
lanes = {}
colours = {}
for lane in root.iter(NS + "g"):
    if lane.get("class") != "lane":
        continue
    spans = []
    for g in lane.iter(NS + "g"):
        if g.get("class") == "span":
            spans.append(g.get("data-category"))
            colours[g.get("data-category")] = g.find(NS + "rect").get("fill")
    lanes[lane.get("data-name")] = spans
for name in sorted(lanes):
    print("lane %s: %s" % (name, ", ".join(sorted(set(lanes[name])))))

chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("screenshot skipped: no chromium on this machine")
    sys.exit(0)
from PIL import Image  # noqa: E402  Debian's python3-pil, beside chromium

width, height = int(root.get("width")), int(float(root.get("height")))
png = out + ".png"
r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1", "--window-size=%d,%d" % (width, height),
                    "--screenshot=" + png, "file://" + svg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                   timeout=120)
if r.returncode != 0:
    sys.exit("chromium exited %d: %s" % (r.returncode, r.stdout.decode(errors="replace")[-2000:]))
pixels = list(Image.open(png).convert("RGB").getdata())


def painted(hex_colour):
    want = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return sum(1 for p in pixels if all(abs(a - b) <= 3 for a, b in zip(p, want)))


lent = painted(colours["lent to lit_borrower"])
kept = painted(colours["kept by its owner"])
print("screenshot: lent %s, kept %s" % ("painted" if lent > 20 else "missing (%d px)" % lent,
                                        "painted" if kept > 20 else "missing (%d px)" % kept))
