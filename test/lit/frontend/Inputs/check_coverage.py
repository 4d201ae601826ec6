"""Lists diagnostic codes of the given .def files that no lit test in TEST_DIR checks as printed
(a FileCheck directive holding 'error[CODE]' or 'warning[CODE]'). Usage: check_coverage.py TEST_DIR DEF...
A DEF may be a glob pattern (lit's shell does not expand them)."""
import glob
import pathlib
import re
import sys

test_dir = pathlib.Path(sys.argv[1])
defs = [f for arg in sys.argv[2:] for f in (sorted(glob.glob(arg)) if "*" in arg else [arg])]
codes = [m for f in defs for m in re.findall(r"^DIAG\((\w+),", pathlib.Path(f).read_text(), re.M)]
checked = set()
for test in test_dir.iterdir():
    if test.is_file() and test.suffix in (".msc", ".test"):
        for line in test.read_text(errors="replace").splitlines():
            if re.match(r"\s*(//|#)\s*[A-Z][A-Z0-9_-]*:", line) and "RUN:" not in line:
                checked.update(re.findall(r"(?:error|warning)\[(\w+)\]", line))
missing = [c for c in codes if c not in checked]
print("%d codes, untested: %s" % (len(codes), " ".join(missing) if missing else "none"))
