#!/usr/bin/env python3
"""Compares a training log with faults and restarts against the uninterrupted run's log.

usage: check_recovery.py REFERENCE.log FAULTY.log --every N [--world W]
Proves: every attempt's steps are continuous from its resume point; every resume point is a snapshot
step (N+1 after a snapshot of step N); every step ever logged (first runs and replays alike) is
byte-identical to the reference (sample ids, loss, lr, loss scale); the effective history (last
attempt of each step) is exactly the reference's steps 1..S, with each sample seen once per epoch;
the final parameter hash is identical; after each supervisor fault the resume used the expected tier
(memory, disk after a lost node; with --world W > 1, the log of one rank of a W-rank job, disk also
when this rank had got past a later recovery point than the one resumed: the ranks resume from the
newest step every rank holds, and when another rank's memory tier lacks this rank's newest, the
agreed older step is on disk only). Faults come from supervise.py's '# supervisor:' lines or from the
'# restart after fault CLASS at step K' lines workers write under mscale-exec.
A '# stopped after step S: planned move' line (a drain) ends an attempt without a fault, right after
step S; the next attempt must resume at S+1 from the snapshot of S (off the cadence: the stop wrote
it), from whichever tier it finds. With any planned move it also prints 'planned moves: N, steps run
twice: M' (M: steps logged more than once across attempts; 0 is a move that replayed nothing).
Prints one line per fact and 'RESULT: PASS' or 'RESULT: FAIL' (exit 1).
"""
import argparse
import collections
import re
import sys


def steps_of(path):
    out = {}
    final = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("step "):
                out[int(line.split()[1])] = line
            elif line.startswith("final "):
                final = line
    return out, final


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("faulty")
    ap.add_argument("--every", type=int, required=True)
    ap.add_argument("--world", type=int, default=1, help="the job's ranks (the log is one rank's)")
    a = ap.parse_args()
    ref, ref_final = steps_of(a.reference)
    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL: " + msg)

    effective = {}
    attempts = 0
    replayed = 0
    expected_step = None
    expect_tier = None
    last_fault = None
    planned_stop = None  # S of the attempt that ended with a planned stop, until the next resumes
    planned_moves = 0
    runs = collections.Counter()
    final = None
    with open(a.faulty) as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"# resume step (\d+) from (\w+) snapshot (\d+)", line)
            if line.startswith("# start step 1"):
                attempts += 1
                if attempts != 1:
                    fail("a restart started from scratch: " + line)
                expected_step = 1
            elif m:
                attempts += 1
                resume, tier, snap = int(m.group(1)), m.group(2), int(m.group(3))
                if planned_stop is not None:
                    # The stop wrote the snapshot of S whatever the cadence; the job may have moved
                    # (disk) or stayed (memory): either holds S.
                    if resume != planned_stop + 1 or snap != planned_stop:
                        fail("after the planned stop at step %d the next attempt did not resume at step %d (%s)"
                             % (planned_stop, planned_stop + 1, line))
                    print("planned move after step %d -> resumed at step %d from %s" % (planned_stop, resume, tier))
                else:
                    if resume != snap + 1 or snap % a.every:
                        fail("resume at %d is not right after a snapshot step (%s)" % (resume, line))
                    # A rank past a later recovery point resumed from an older one: the step every
                    # rank agreed on, older than this rank's memory tier holds (see --world).
                    agreed_older = (a.world > 1 and expected_step is not None and snap + a.every <= expected_step - 1)
                    if expect_tier and tier != expect_tier and not (expect_tier == "memory" and agreed_older):
                        fail("after '%s' the resume used the %s tier, expected %s" % (last_fault, tier, expect_tier))
                    print("fault %s -> resumed at step %d from %s" % (last_fault or "?", resume, tier))
                expected_step = resume
                expect_tier = None
                planned_stop = None
            elif re.match(r"# stopped after step \d+: planned move$", line):
                planned_stop = int(line.split()[4].rstrip(":"))
                planned_moves += 1
                if expected_step != planned_stop + 1:
                    fail("'%s' where the last step logged was %s" % (line, None if expected_step is None else expected_step - 1))
            elif line.startswith("# restart after fault "):
                # mscale-exec's supervisor hands the fault to the restarted worker (MSCALE_RESTART_REASON)
                last_fault = line[len("# restart after fault "):]
                if planned_stop is None:  # after a planned stop either tier may hold S: none is expected
                    expect_tier = "disk" if last_fault.startswith("node-lost") else "memory"
            elif line.startswith("# supervisor: fault "):
                fm = re.match(r"# supervisor: fault (\S+) at step (\d+) .*expect-tier (\w+)", line)
                last_fault = "%s at step %s" % (fm.group(1), fm.group(2))
                expect_tier = fm.group(3)
            elif line.startswith("# skipped "):
                print(line[2:])
            elif line.startswith("step "):
                s = int(line.split()[1])
                if expected_step is None or s != expected_step:
                    fail("step %d logged where step %s was due" % (s, expected_step))
                expected_step = s + 1
                if s in effective:
                    replayed += 1
                runs[s] += 1
                if ref.get(s) != line:
                    fail("step %d differs from the uninterrupted run:\n  got  %s\n  want %s" % (s, line, ref.get(s)))
                effective[s] = line
            elif line.startswith("final "):
                final = line
    print("attempts: %d, replayed steps identical to their first run: %d" % (attempts, replayed))
    if planned_moves:
        print("planned moves: %d, steps run twice: %d" % (planned_moves, sum(1 for n in runs.values() if n > 1)))
    if sorted(effective) != sorted(ref):
        missing = sorted(set(ref) - set(effective))
        extra = sorted(set(effective) - set(ref))
        fail("steps missing %s, unexpected %s" % (missing[:10], extra[:10]))
    else:
        print("steps 1..%d continuous; effective history identical to the uninterrupted run" % len(ref))
    # Each sample once per epoch, in the effective history.
    per_epoch = collections.defaultdict(list)
    for s in sorted(effective):
        parts = effective[s].split()
        per_epoch[int(parts[3])] += [int(x) for x in parts[5].split(",")]
    all_ids = collections.Counter(i for ids in per_epoch.values() for i in ids)
    dup_epochs = [e for e, ids in per_epoch.items() if len(ids) != len(set(ids))]
    if dup_epochs:
        fail("a sample is seen twice within epoch(s) %s" % dup_epochs)
    else:
        print("samples: %d distinct ids over %d epochs, none twice in an epoch" % (len(all_ids), len(per_epoch)))
    if final is None or final != ref_final:
        fail("final state differs: got %r, want %r" % (final, ref_final))
    else:
        print("final state identical: " + final)
    print("RESULT: " + ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
