#!/usr/bin/env python3
"""A stand-in for mscale-exec's supervisor (issue 6): runs mscale-train-sim, injects faults at
seeded random steps, classifies each failure by how the worker ended, and restarts it with --resume
the way the executor will, until the run completes.

Faults: kill9 (SIGKILL from outside), fail (--fail-at-step: abort), eio (--eio-at-step: exit 74),
crash-in-snapshot (dies half-way through writing a snapshot), node-loss (kill9 + the memory tier
is gone), corrupt (kill9 + memory tier gone + the newest disk snapshot corrupted).
The memory tier is a memfd the supervisor creates and hands over in MSCALE_SNAPSHOT_MEMFD (--memfd)
or a named POSIX shm object (default). Each fault is recorded in the training log as
'# supervisor: fault CLASS at step K (HOW) expect-tier TIER', which check_recovery.py verifies.
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "scripts", "recovery"))
from trainlog import corrupt_first_blob, newest_disk_snapshot, steps_logged

KILL_STYLE = {"kill9", "node-loss", "corrupt"}


def log_line(path, text):
    with open(path, "a") as f:
        f.write(text + "\n")




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--faults", default="kill9,fail,eio,crash-in-snapshot,node-loss,corrupt")
    ap.add_argument("--memfd", action="store_true")
    ap.add_argument("--sim", default=shutil.which("mscale-train-sim"))
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # in order with the workers' stderr

    os.makedirs(a.work, exist_ok=True)
    snap_dir = os.path.join(a.work, "snaps")
    train_log = os.path.join(a.work, "train.log")
    shm_name = "msc-recovery-%d" % os.getpid()
    rnd = random.Random(a.seed)
    faults = a.faults.split(",") if a.faults else []
    rnd.shuffle(faults)
    # One fault per 'segment' of the run, so each lands after the previous restart's resume point.
    seg = (a.steps - a.every - 2) // max(len(faults), 1)
    plan = []
    for i, f in enumerate(faults):
        lo = a.every + 2 + i * seg
        step = rnd.randrange(lo, lo + max(seg - 1, 1))
        if f == "crash-in-snapshot":
            step = (step // a.every + 1) * a.every
        plan.append((f, step))
    print("plan: " + ", ".join("%s@%d" % p for p in plan))

    memfd = os.memfd_create("msc-recovery-pool") if a.memfd else -1
    base = [a.sim, "--data", a.data, "--steps", str(a.steps), "--snapshot-every", str(a.every),
            "--snapshot-dir", snap_dir, "--log", train_log, "--quiet"]
    if not a.memfd:
        base += ["--mem-name", shm_name]
    env = dict(os.environ)
    env.pop("MSCALE_SNAPSHOT_MEMFD", None)
    attempts = 0
    max_attempts = len(plan) + 3
    try:
        while True:
            attempts += 1
            if attempts > max_attempts:
                print("supervisor: too many restarts", file=sys.stderr)
                return 1
            fault, step = plan.pop(0) if plan else (None, None)
            cmd = list(base) + (["--resume"] if attempts > 1 else [])
            if fault == "fail":
                cmd += ["--fail-at-step", str(step)]
            elif fault == "eio":
                cmd += ["--eio-at-step", str(step)]
            elif fault == "crash-in-snapshot":
                cmd += ["--crash-in-snapshot-at-step", str(step)]
            elif fault in KILL_STYLE:
                cmd += ["--step-delay-ms", "3"]
            pass_fds = ()
            if memfd >= 0:
                env["MSCALE_SNAPSHOT_MEMFD"] = str(memfd)
                pass_fds = (memfd,)
            start = os.path.getsize(train_log) if os.path.exists(train_log) else 0
            proc = subprocess.Popen(cmd, env=env, pass_fds=pass_fds, stdout=subprocess.DEVNULL)
            if fault in KILL_STYLE:
                while proc.poll() is None and step not in steps_logged(train_log, start):
                    time.sleep(0.001)
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
            rc = proc.wait()
            if rc == 0 and fault is None:
                print("completed after %d attempts" % attempts)
                return 0
            # Classify the way the executor does: from how the worker ended.
            if rc == -signal.SIGKILL:
                cls, how = "worker-killed", "SIGKILL"
            elif rc == -signal.SIGABRT:
                cls, how = "worker-crashed", "SIGABRT"
            elif rc == 86:
                cls, how = "worker-crashed", "exit 86 in snapshot write"
            elif rc == 74:
                cls, how = "nvme-io-error", "exit 74"
            else:
                print("supervisor: worker ended with %d (fault %s): not a fault we injected" % (rc, fault),
                      file=sys.stderr)
                return 1
            expect = "memory"
            if fault in ("node-loss", "corrupt"):
                cls = "node-lost" if fault == "node-loss" else "node-lost+corrupt-snapshot"
                expect = "disk"
                if memfd >= 0:
                    os.close(memfd)
                    memfd = os.memfd_create("msc-recovery-pool")
                else:
                    try:
                        os.unlink("/dev/shm/" + shm_name)
                    except FileNotFoundError:
                        pass
                if fault == "corrupt":
                    victim = newest_disk_snapshot(snap_dir)
                    corrupt_first_blob(victim)
                    how += ", corrupted " + os.path.basename(victim)
            done = steps_logged(train_log, start)
            last = done[-1] if done else 0
            log_line(train_log, "# supervisor: fault %s at step %d (%s) expect-tier %s" % (cls, last, how, expect))
            print("fault %s at step %d (%s); restarting" % (cls, last, how))
    finally:
        if memfd >= 0:
            os.close(memfd)
        try:
            os.unlink("/dev/shm/" + shm_name)
        except FileNotFoundError:
            pass


if __name__ == "__main__":
    sys.exit(main())
