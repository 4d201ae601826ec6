"""The history of an elastic job (elastic_worker.py's log) against the uninterrupted run's.  A step's
effective record is its last placement's (a step run again after a node loss counts once, and its
runs must agree).  Prints one line per fact; with --timings FILE, also the seconds from each event
(lines "EVENT unix-seconds" of FILE, e.g. "kill 1765090000.5") to the first step at the next size.
Usage: elastic_history.py LOG REFERENCE_LOG [--timings FILE]"""
import sys
from typing import Dict, List, Tuple

Record = Tuple[float, str, int, int, int, str, str]  # t, placement, world, rank, epoch, samples, loss


def read(path: str) -> Tuple[Dict[int, Dict[str, List[Record]]], List[Tuple[str, int, float]]]:
    """step -> placement -> its ranks' records, and the placements in order of their first step
    (placement, world size, first time)."""
    steps: Dict[int, Dict[str, List[Record]]] = {}
    placements: List[Tuple[str, int, float]] = []
    with open(path) as f:
        for line in f:
            w = line.split()
            t, placement, step, world, rank, epoch, samples, loss = (
                float(w[1]), w[3], int(w[5]), int(w[7]), int(w[9]), int(w[11]), w[13], w[15])
            steps.setdefault(step, {}).setdefault(placement, []).append((t, placement, world, rank, epoch, samples, loss))
            if not placements or placements[-1][0] != placement:
                if all(p[0] != placement for p in placements):
                    placements.append((placement, world, t))
    return steps, placements


def effective(steps: Dict[int, Dict[str, List[Record]]], order: List[str]) -> Dict[int, Tuple[int, List[int], str, int]]:
    """step -> (epoch, its global batch's sample ids in rank order, loss, world size) of its last run."""
    out = {}
    for step, by in steps.items():
        last = max(by, key=order.index)
        ranks = sorted(by[last], key=lambda r: r[3])
        ids = [int(i) for r in ranks for i in r[5].split(",") if i]
        out[step] = (ranks[0][4], ids, ranks[0][6], ranks[0][2])
    return out


def main() -> None:
    log, ref = sys.argv[1], sys.argv[2]
    steps, placements = read(log)
    order = [p[0] for p in placements]
    mine = effective(steps, order)
    ref_steps, ref_placements = read(ref)
    theirs = effective(ref_steps, [p[0] for p in ref_placements])
    n = max(theirs)
    print("sizes in order: %s" % " -> ".join(str(p[1]) for p in placements))
    print("steps: 1..%d %s" % (n, "continuous" if sorted(mine) == list(range(1, n + 1)) else "NOT continuous: %s" % sorted(mine)))
    complete = {s: v for s, v in mine.items() if len(v[1]) and len({r[3] for r in steps[s][max(steps[s], key=order.index)]}) == v[3]}
    print("every step's ranks all logged: %s" % ("yes" if len(complete) == len(mine) else "NO"))
    again = [s for s, by in steps.items() if len(by) > 1]
    differ = [s for s in again if len({r[6] for rs in steps[s].values() for r in rs}) > 1]
    print("steps run again after a node loss: %d, each as its first run: %s" % (len(again), "yes" if not differ else "NO %s" % differ))
    per_epoch: Dict[int, List[int]] = {}
    for epoch, ids, _, _ in mine.values():
        per_epoch.setdefault(epoch, []).extend(ids)
    full = [e for e in per_epoch if e < max(per_epoch)] or list(per_epoch)
    once = all(sorted(per_epoch[e]) == sorted(set(per_epoch[e])) for e in per_epoch) and \
        all(len(per_epoch[e]) == len(per_epoch[full[0]]) for e in full)
    print("samples: each once in every epoch (%d epochs): %s" % (len(per_epoch), "yes" if once else "NO"))
    batches = all(sorted(mine[s][1]) == sorted(theirs[s][1]) for s in theirs if s in mine)
    print("each step's global batch the uninterrupted run's: %s" % ("yes" if batches else "NO"))
    equal = sum(1 for s in theirs if s in mine and mine[s][2] == theirs[s][2])
    print("losses bit-identical to the uninterrupted run: %d of %d" % (equal, n))
    finals = []
    for path in (log, ref):
        try:
            finals.append(open(path + ".final").read().strip())
        except OSError:
            finals.append("missing")
    print("final parameters bit-identical: %s" % ("yes" if finals[0] == finals[1] != "missing" else "NO %s" % finals))
    if "--timings" in sys.argv:
        with open(sys.argv[sys.argv.index("--timings") + 1]) as f:
            events = [(line.split()[0], float(line.split()[1])) for line in f if line.strip()]
        for name, at in events:
            nxt = [p for p in placements if p[2] > at]
            first = min((min(r[0] for r in by[p[0]]) for by in steps.values() for p in nxt[:1] if p[0] in by), default=None)
            print("%s -> first step at world size %s: %s" % (name, nxt[0][1] if nxt else "?",
                                                           "%.1f s" % (first - at) if first else "none"), file=sys.stderr)


if __name__ == "__main__":
    main()
