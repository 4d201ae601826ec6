#!/usr/bin/env python3
"""Checks the Grafana dashboard against what the agent really exports.

check_dashboard.py DASHBOARD.json SCRAPE.txt

SCRAPE.txt is the agent's /metrics text. Every identifier in a panel's PromQL (and the template
variables' queries), outside label matchers, durations and strings, must be a PromQL function or
keyword or a metric family the scrape declares with "# TYPE"; every exported family must be on some
panel, so the dashboard stays complete when a metric is added. Prints what it checked.
"""
import json
import re
import sys

PROMQL_WORDS = {
    "rate", "irate", "increase", "sum", "avg", "max", "min", "count", "by", "without", "on", "ignoring",
    "group_left", "group_right", "label_values", "topk", "bottomk", "delta", "deriv", "histogram_quantile",
    "avg_over_time", "max_over_time", "min_over_time", "and", "or", "unless", "offset", "bool", "clamp_min",
}


def fail(msg):
    print("check_dashboard: " + msg)
    sys.exit(1)


def identifiers(expr):
    expr = re.sub(r"label_values\(([^,()]+),\s*\w+\s*\)", r"label_values(\1)", expr)  # (metric, LABEL)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)      # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)               # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)              # ranges
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", r"\1", expr)  # grouping labels
    expr = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b", "", expr)  # numbers
    expr = re.sub(r"\$\w+", "", expr)                   # template variables
    return re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr)


def main():
    dash = json.load(open(sys.argv[1]))
    exported = set(re.findall(r"^# TYPE (\S+) ", open(sys.argv[2]).read(), re.M))
    if not exported:
        fail("the scrape declares no metric families")
    exprs = []
    ids = set()
    for p in dash["panels"]:
        if p["id"] in ids:
            fail("panel id %d twice" % p["id"])
        ids.add(p["id"])
        if not p.get("targets"):
            fail("panel %r has no query" % p["title"])
        exprs += [(p["title"], t["expr"]) for t in p["targets"]]
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            exprs.append(("variable " + v["name"], q["query"]))
    scrape = open(sys.argv[2]).read()
    for where, e in exprs:
        for metric, label in re.findall(r"label_values\((\w+),\s*(\w+)\s*\)", e):
            if not re.search(r"^%s\{[^}]*\b%s=" % (metric, label), scrape, re.M):
                fail("%s: no series of %s carries the label %r" % (where, metric, label))
    used = set()
    for where, e in exprs:
        for name in identifiers(e):
            if name in PROMQL_WORDS:
                continue
            if name not in exported:
                fail("%s: %r queries %r, which the agent does not export (it exports %s)"
                     % (where, e, name, ", ".join(sorted(exported))))
            used.add(name)
    missing = exported - used
    if missing:
        fail("exported but on no panel: %s" % ", ".join(sorted(missing)))
    print("dashboard ok: %d panels, %d queries, all %d exported metric families shown"
          % (len(dash["panels"]), len(exprs), len(exported)))


if __name__ == "__main__":
    main()
