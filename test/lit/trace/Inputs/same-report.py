"""same-report.py A.json B.json: the two mscale-trace reports have the same shape (the same keys at
every level, the same value types; elements of a list only where both lists have some) and agree on what they counted: per function its name, kind,
calls and whether it was timed. Prints the first difference and exits 1; prints 'same report' else."""
import json
import sys


def shape(value, path, out):
    if isinstance(value, dict):
        out.append((path, "object", tuple(sorted(value))))
        for k, v in value.items():
            shape(v, path + "." + k, out)
    elif isinstance(value, list):
        out.append((path, "array", None))
        if value:  # lists differ in length (events, histograms): the first element stands for all
            shape(value[0], path + "[]", out)
    else:
        out.append((path, type(value).__name__, None))
    return out


def counted(report):
    return [(f["function"], f["kind"], f["calls"], f["timed"]) for f in report["functions"]]


a, b = (json.load(open(p)) for p in sys.argv[1:3])
sa = {path: rest for path, *rest in shape(a, "", [])}
sb = {path: rest for path, *rest in shape(b, "", [])}
for path in sorted(set(sa) | set(sb)):
    if (path not in sa or path not in sb) and "[]" in path:
        continue  # an element of a list that is empty in one report (no events, say)
    if sa.get(path) != sb.get(path):
        print("shape differs at '%s': %s vs %s" % (path, sa.get(path), sb.get(path)))
        sys.exit(1)
if counted(a) != counted(b):
    print("counts differ:\n  %s\n  %s" % (counted(a), counted(b)))
    sys.exit(1)
print("same report: %d functions, mechanisms %s and %s" % (len(a["functions"]), a["mechanism"], b["mechanism"]))
