#!/usr/bin/env python3
"""Checks a speedscope file against the file format's schema and the folded stacks it came from.

check_speedscope.py JSON FOLDED [--times]

The schema (https://www.speedscope.app/file-format-schema.json, from speedscope's
src/lib/file-format-spec.ts) requires of the file "$schema" (that exact URL), "shared" with
"frames" (each with a string "name"), and "profiles"; of a sampled profile "type": "sampled",
"name", "unit" (one of none, nanoseconds, microseconds, milliseconds, seconds, bytes),
"startValue", "endValue", "samples" (lists of indices into the frames) and "weights" (one number
per sample). Beyond the schema: the samples, read back through the frames, are the folded stacks
with their counts; with --times a second profile in nanoseconds must exist.
"""
import json
import sys

UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
SCHEMA = "https://www.speedscope.app/file-format-schema.json"
SUFFIX = "_[implicit-sync]"


def fail(msg):
    print("check_speedscope: " + msg)
    sys.exit(1)


def need(obj, key, typ, where):
    if key not in obj:
        fail("%s has no required field %r" % (where, key))
    if not isinstance(obj[key], typ) or isinstance(obj[key], bool):
        fail("%s.%s is %r, not %s" % (where, key, obj[key], typ))
    return obj[key]


def main():
    path, folded = sys.argv[1], sys.argv[2]
    times = "--times" in sys.argv[3:]
    doc = json.load(open(path))
    if need(doc, "$schema", str, "file") != SCHEMA:
        fail("$schema is %r" % doc["$schema"])
    frames = need(need(doc, "shared", dict, "file"), "frames", list, "shared")
    for i, f in enumerate(frames):
        need(f, "name", str, "frames[%d]" % i)
    profiles = need(doc, "profiles", list, "file")
    if not profiles:
        fail("no profiles")
    expected = {}
    for line in open(folded):
        if line.strip():
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            names = stack.split(";")
            if names[-1].endswith(SUFFIX):
                names[-1] = names[-1][: -len(SUFFIX)] + " [implicit sync]"
            expected[tuple(names)] = expected.get(tuple(names), 0) + int(count)
    for p_i, p in enumerate(profiles):
        where = "profiles[%d]" % p_i
        if need(p, "type", str, where) != "sampled":
            fail("%s.type is %r" % (where, p["type"]))
        need(p, "name", str, where)
        if need(p, "unit", str, where) not in UNITS:
            fail("%s.unit %r is not a speedscope unit" % (where, p["unit"]))
        start = need(p, "startValue", (int, float), where)
        end = need(p, "endValue", (int, float), where)
        samples = need(p, "samples", list, where)
        weights = need(p, "weights", list, where)
        if len(samples) != len(weights):
            fail("%s: %d samples but %d weights" % (where, len(samples), len(weights)))
        if end < start or end - start != sum(weights):
            fail("%s: endValue %r - startValue %r is not the weights' sum %r" % (where, end, start, sum(weights)))
        got = {}
        for s in samples:
            if not all(isinstance(i, int) and 0 <= i < len(frames) for i in s):
                fail("%s: sample %r indexes outside the %d frames" % (where, s, len(frames)))
        if p_i == 0:
            if p["unit"] != "none":
                fail("the first profile should count calls (unit none)")
            for s, w in zip(samples, weights):
                key = tuple(frames[i]["name"] for i in s)
                got[key] = got.get(key, 0) + w
            if got != expected:
                fail("samples and weights are not the folded stacks:\n%r\n%r" % (got, expected))
    if times and (len(profiles) != 2 or profiles[1]["unit"] != "nanoseconds"):
        fail("expected a second profile weighted in nanoseconds")
    if not times and len(profiles) != 1:
        fail("expected one profile (no times in the input)")
    print("speedscope ok: %d frames, %d profile(s), %d stacks" % (len(frames), len(profiles), len(expected)))


if __name__ == "__main__":
    main()
