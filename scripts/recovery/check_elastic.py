#!/usr/bin/env python3
"""check_elastic.py: judges an elastic mscale-train-sim job (--elastic) that ran as a series of
attempts at changing world sizes against the uninterrupted run, from the logs alone.

    check_elastic.py REF.log --micro-batch N ATTEMPT.log [ATTEMPT.log ...]

Each ATTEMPT.log is rank 0's log of one attempt, in the order they ran; rank r's is ATTEMPT.log.rank<r>.
Nothing the trainer says of itself is taken on trust: the share of each rank is worked out here
(contiguous runs of micro-batches, as many as the world size allows), and every line is held to the
reference's line of the same step. Checked:
  - every rank of an attempt says the same world size and first step, and logs consecutive steps;
  - each step line (epoch, loss, LR, loss scale) is the reference's, and its sample ids are the
    rank's share of the reference's batch;
  - every step 1..N was last run whole: by every rank of the last attempt that ran it;
  - an attempt that stopped for a planned move is followed by one that starts at the next step
    (no step run twice), and every rank of it stopped there;
  - the samples of the history, in order, are each sample once in every epoch;
  - the final parameters are the reference's.
Exit 0 and "RESULT: PASS" when all hold; else each failure is printed and the exit status is 1.
"""
import argparse
import os
import re
import sys

HEADER = re.compile(r"^# rank (\d+) of (\d+) from step (\d+)$")
STOPPED = re.compile(r"^# stopped after step (\d+): planned move$")


def parse(path):
    steps, header, stopped, final = [], None, None, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("step "):
                w = line.split(" ", 6)
                if len(w) < 7 or w[2] != "epoch" or w[4] != "ids":
                    raise SystemExit("%s: a step line does not read: %s" % (path, line))
                steps.append((int(w[1]), int(w[3]), [int(i) for i in w[5].split(",") if i], w[6]))
            elif line.startswith("final "):
                final = line
            elif HEADER.match(line):
                header = tuple(int(g) for g in HEADER.match(line).groups())
            elif STOPPED.match(line):
                stopped = int(STOPPED.match(line).group(1))
    return {"steps": steps, "header": header, "stopped": stopped, "final": final}


def share(rank, world, micro_batches):
    return rank * micro_batches // world, (rank + 1) * micro_batches // world


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("attempts", nargs="+")
    ap.add_argument("--micro-batch", type=int, required=True)
    a = ap.parse_args()
    failures = []
    fail = failures.append
    ref = parse(a.ref)
    ref_steps = {s: (e, ids, tail) for s, e, ids, tail in ref["steps"]}
    last = max(ref_steps, default=0)
    if not last or sorted(ref_steps) != list(range(1, last + 1)) or not ref["final"]:
        raise SystemExit("%s: not a whole uninterrupted run" % a.ref)
    batch = len(ref_steps[1][1])
    if batch % a.micro_batch:
        raise SystemExit("the reference's batch of %d is not whole micro-batches of %d" % (batch, a.micro_batch))
    micro_batches = batch // a.micro_batch

    attempts = []  # per attempt: world, first step, {step: ranks that logged it}, stopped-by-rank, finals
    for path in a.attempts:
        rank0 = parse(path)
        if not rank0["header"] or rank0["header"][0] != 0:
            fail("%s: no '# rank 0 of W from step X' line" % os.path.basename(path))
            continue
        _, world, first = rank0["header"]
        logged, stopped, finals = {}, [], []
        for rank in range(world):
            log = rank0 if rank == 0 else parse("%s.rank%d" % (path, rank)) if os.path.exists(
                "%s.rank%d" % (path, rank)) else None
            name = os.path.basename(path) + ("" if rank == 0 else ".rank%d" % rank)
            if log is None:
                fail("%s: missing: rank %d of %d ran no attempt" % (name, rank, world))
                continue
            if log["header"] != (rank, world, first):
                fail("%s: says %s, not rank %d of %d from step %d" % (name, log["header"], rank, world, first))
            lo, hi = share(rank, world, micro_batches)
            expect = first
            for step, epoch, ids, tail in log["steps"]:
                if step != expect:
                    fail("%s: step %d follows step %d" % (name, step, expect - 1))
                expect = step + 1
                r = ref_steps.get(step)
                if r is None:
                    fail("%s: step %d is beyond the run's %d" % (name, step, last))
                    continue
                if (epoch, tail) != (r[0], r[2]):
                    fail("%s: step %d: epoch %d, '%s' against the reference's epoch %d, '%s'" %
                         (name, step, epoch, tail, r[0], r[2]))
                if ids != r[1][lo * a.micro_batch:hi * a.micro_batch]:
                    fail("%s: step %d: ids %s are not its share (micro-batches %d..%d) of %s" %
                         (name, step, ids, lo, hi - 1, r[1]))
                logged.setdefault(step, set()).add(rank)
            stopped.append(log["stopped"])
            finals.append(log["final"])
        attempts.append({"name": os.path.basename(path), "world": world, "first": first, "logged": logged,
                         "stopped": stopped, "finals": finals})

    # Every step was last run whole; the history it makes, its samples.
    history = []
    for step in range(1, last + 1):
        runs = [t for t in attempts if step in t["logged"]]
        if not runs:
            fail("step %d was never run" % step)
            continue
        t = runs[-1]
        if len(t["logged"][step]) != t["world"]:
            fail("%s: step %d, the last run of it, was run by ranks %s of %d only" %
                 (t["name"], step, sorted(t["logged"][step]), t["world"]))
        history.extend(ref_steps[step][1])
    samples = len(set(history))
    epochs = 0
    for at in range(0, len(history), samples or 1):
        block = history[at:at + samples]
        if len(set(block)) != len(block) or (len(block) == samples and set(block) != set(history)):
            fail("samples %d..%d of the history are not each sample once" % (at, at + len(block) - 1))
        epochs += len(block) == samples

    # Planned moves replay nothing; losses replay only what was not committed.
    planned = replayed_after_planned = replayed = lost = 0
    for prev, nxt in zip(attempts, attempts[1:]):
        stops = set(prev["stopped"])
        if prev["stopped"][0] is not None:
            planned += 1
            if stops != {prev["stopped"][0]}:
                fail("%s: its ranks stopped after steps %s, not one step" % (prev["name"], prev["stopped"]))
            replayed_after_planned += max(0, prev["stopped"][0] + 1 - nxt["first"])
        else:
            lost += 1
        replayed += sum(1 for s in nxt["logged"] if s in prev["logged"])
    if replayed_after_planned:
        fail("%d steps were run twice after planned moves" % replayed_after_planned)
    changes = sum(1 for p, n in zip(attempts, attempts[1:]) if p["world"] != n["world"])
    final = attempts[-1]["finals"] if attempts else []
    if not final or any(f != ref["final"] for f in final):
        fail("the last attempt's final lines %s are not the reference's '%s'" % (final, ref["final"]))

    print("attempts: %d, world-size changes: %d, sizes: %s" %
          (len(attempts), changes, " ".join(str(s) for s in sorted({t["world"] for t in attempts}))))
    print("planned moves: %d, steps run twice after them: %d" % (planned, replayed_after_planned))
    print("attempts ended by a lost rank: %d, steps run again after them: %d (each as it first ran)" %
          (lost, replayed))
    print("steps 1..%d each last run whole; ids, losses, LRs and loss scales those of the uninterrupted run" % last)
    print("samples: each of %d once in each of %d whole epochs" % (samples, epochs))
    for f in failures[:20]:
        print("FAIL: " + f)
    if len(failures) > 20:
        print("FAIL: ... and %d more" % (len(failures) - 20))
    print("RESULT: " + ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
