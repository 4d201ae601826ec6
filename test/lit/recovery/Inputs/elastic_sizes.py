#!/usr/bin/env python3
"""elastic_sizes.py: an elastic mscale-train-sim job driven through many world-size changes.

Each attempt runs the job's ranks (mscale-train-sim --elastic, RANK/WORLD_SIZE/MASTER_PORT as a
placement gives them) at a world size other than the last one's, and ends it as the cluster does:
a planned stop after a step chosen ahead (every rank told on its control page, as a grow or a drain
asks) or a rank SIGKILLed mid-step (a node lost; the others lose their peer and exit 75). The next
attempt resumes at another size; the last one trains to the end. The logs of every attempt are left
in WORK for scripts/recovery/check_elastic.py, which judges them against an uninterrupted run; this
driver only says what it did.

usage: elastic_sizes.py --bin DIR --work DIR [--changes N] [--sizes 2,3,4] [--seed S]
"""
import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import time

BATCH, MICRO_BATCH, SNAPSHOT_EVERY = 12, 2, 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def newest_snapshot(snaps):
    steps = [int(n[5:-6]) for n in os.listdir(snaps) if n.startswith("snap-") and n.endswith(".msnap")] \
        if os.path.isdir(snaps) else []
    return max(steps, default=0)


def last_step(log):
    step = 0
    try:
        with open(log) as f:
            for line in f:
                if line.startswith("step "):
                    step = int(line.split()[1])
    except FileNotFoundError:
        pass
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--changes", type=int, default=1000)
    ap.add_argument("--sizes", default="2,3,4")
    ap.add_argument("--seed", type=int, default=29)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    rnd = random.Random(a.seed)
    train = os.path.join(a.bin, "mscale-train-sim")
    page_run = os.path.join(a.bin, "control-page-run")
    data, snaps = os.path.join(a.work, "data"), os.path.join(a.work, "snaps")
    steps = 2 * a.changes + 20
    subprocess.run([train, "--gen-data", data, "--samples", "96", "--files", "4"], check=True)
    common = ["--data", data, "--steps", str(steps), "--batch", str(BATCH), "--micro-batch", str(MICRO_BATCH),
              "--elastic", "--quiet"]
    # The uninterrupted run the checker holds the job to: one rank, never stopped.
    subprocess.run([train, *common, "--snapshot-every", "0", "--log", os.path.join(a.work, "ref.log")],
                   check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    world, planned, killed, attempt = 0, 0, 0, 0
    started = time.monotonic()
    while True:
        attempt += 1
        world = rnd.choice([s for s in sizes if s != world])
        resume = newest_snapshot(snaps)
        last = attempt > a.changes  # the size changes are done: train to the end
        stop_after = 0 if last else min(resume + rnd.randint(1, 2), steps)
        kill = not last and rnd.random() < 0.4
        log = os.path.join(a.work, "attempt-%04d.log" % attempt)
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port))
            cmd = [train, *common, "--snapshot-dir", snaps, "--snapshot-every", str(SNAPSHOT_EVERY), "--log", log]
            if kill:
                cmd += ["--step-delay-ms", "3"]  # time to be killed mid-run
            elif stop_after:
                cmd = [page_run, "--stop-after", str(stop_after), "--", *cmd]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if kill:
            # A node lost mid-run: a rank killed once rank 0 has logged a step of this attempt (all
            # have joined) and at most two steps in.
            victim = rnd.randrange(world)
            target = resume + rnd.randint(1, 2)
            deadline = time.monotonic() + 60
            while last_step(log) < target and procs[0].poll() is None and time.monotonic() < deadline:
                time.sleep(0.001)
            procs[victim].send_signal(signal.SIGKILL)
        codes = [p.wait(timeout=120) for p in procs]
        if kill:
            killed += 1
            lost = [-signal.SIGKILL if r == victim else 75 for r in range(world)]
            if codes != lost:
                sys.exit("attempt %d: rank %d killed, the ranks ended with %s, not %s (75: peer lost)" %
                         (attempt, victim, codes, lost))
        elif not last:
            planned += 1
            if any(codes):
                sys.exit("attempt %d: a planned stop after step %d ended with %s" % (attempt, stop_after, codes))
        if last:
            if any(codes):
                sys.exit("the last attempt ended with %s" % codes)
            break
        if last_step(log) >= steps and not kill:
            sys.exit("the job reached its last step before %d size changes; give it more steps" % a.changes)
    print("attempts: %d (world sizes from %s), planned stops: %d, ranks killed: %d, steps: %d, %.1f s" %
          (attempt, a.sizes, planned, killed, steps, time.monotonic() - started))


if __name__ == "__main__":
    main()
