#!/usr/bin/env python3
"""Drives the fault matrix through mscale-exec: runs `mscale-exec run PLAN -- mscale-train-sim ...`
(or, after `--`, any worker that logs as mscale-train-sim does to WORK/train.log and keeps its disk
snapshots in WORK/snaps, e.g. examples/python/train.py) and injects one fault per attempt at seeded
random steps, from outside, the way they happen:

  kill9      SIGKILL to the worker                         -> worker-crashed (SIGKILL)
  gpu        `gpu 0 fault lost` in the sim control file    -> gpu-lost, the slice moves to another GPU
  eio        --eio-at-step K@A on the worker command line  -> nvme-io-error (exit 74)
  rdma       `rdma mlx5_0 1 down` in the control file      -> rdma-port-down, QPs fail over
  hang       SIGSTOP to the worker                         -> worker-hung (no heartbeats)
  node-loss  SIGKILL to mscale-exec itself (its worker dies with it), the newest disk snapshot
             corrupted, the control file reset (a new node), then `mscale-exec run --resume`

The executor detects, classifies and recovers every fault itself; this script only injects them
and waits. It prints the plan of faults and mscale-exec's fault and recovery lines.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import time

from trainlog import corrupt_first_blob, newest_disk_snapshot, steps_logged

FAULTS = ["kill9", "gpu", "eio", "rdma", "hang", "node-loss"]



def log_size(path):
    return os.path.getsize(path) if os.path.exists(path) else 0


WORKER_STARTED = re.compile(r"info: worker (\d+)(?: \((rank (\d+)|standby.*?)\))? started: ")
STANDBY_TOOK_OVER = re.compile(r"info: standby worker\(s\) ([\d, ]+) took over")


def worker_of(exec_log, index=0):
    """The running attempt's `index`-th worker (with --nproc-per-node: rank `index`), from the
    executor's log: the newest start of that rank, or the warm standby that took over after it
    (a standby waiting for the job is no victim)."""
    current = {}
    with open(exec_log) as f:
        for line in f:
            started = WORKER_STARTED.search(line)
            if started and not (started.group(2) or "").startswith("standby"):
                current[int(started.group(3) or 0)] = int(started.group(1))
            took = STANDBY_TOOK_OVER.search(line)
            if took:
                current = {rank: int(pid) for rank, pid in enumerate(took.group(1).split(", "))}
    return current.get(index)


STANDBY_STARTED = re.compile(r"info: worker (\d+) \(standby[^)]*\) started: ")
STANDBY_READY = re.compile(r"info: standby worker\(s\) ([\d, ]+) ready: ")


def wait_for_standby(exec_log, proc, timeout=120):
    """Waits until the newest warm standby the executor started says it is ready (waits for the job
    with its state allocated); False if mscale-exec ended first or none is started in time."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(exec_log) as f:
            text = f.read()
        started = STANDBY_STARTED.findall(text)
        ready = {pid for line in STANDBY_READY.findall(text) for pid in line.split(", ")}
        if started and started[-1] in ready:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    return False


def wait_for_step(train_log, start, step, proc, timeout=60):
    """Waits until `step` is logged after byte `start`; False if mscale-exec ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if step in steps_logged(train_log, start):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    return False


def restart_offset(train_log, after):
    """Byte offset of the newest '# resume' line after `after` (the current attempt's start)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        with open(train_log) as f:
            f.seek(after)
            text = f.read()
        at = text.rfind("# resume step")
        if at >= 0:
            return after + at
        time.sleep(0.002)
    raise SystemExit("no restart after byte %d of %s within 30 s" % (after, train_log))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exec", required=True, help="mscale-exec")
    ap.add_argument("--sim", help="mscale-train-sim (or give the worker command after --)")
    ap.add_argument("--plan", required=True)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--data")
    ap.add_argument("--heartbeat-timeout", type=float, default=60, help="seconds to wait for a step")
    ap.add_argument("worker", nargs=argparse.REMAINDER, help="-- CMD ARGS: the worker instead of --sim")
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--exec-arg", action="append", default=[], help="an option for `mscale-exec run` (repeatable)")
    ap.add_argument("--victim", type=int, default=0, help="which worker process kill9/hang hit (a rank)")
    ap.add_argument("--wait-standby", action="store_true",
                    help="inject kill9, gpu, rdma and hang only once the executor's warm standby is ready")
    a = ap.parse_args()
    if a.worker[:1] == ["--"]:
        a.worker = a.worker[1:]
    if bool(a.sim) == bool(a.worker):
        ap.error("give either --sim (with --data) or a worker command after --")
    sys.stdout.reconfigure(line_buffering=True)

    os.makedirs(a.work, exist_ok=True)
    snap_dir = os.path.join(a.work, "snaps")
    train_log = os.path.join(a.work, "train.log")
    exec_log = os.path.join(a.work, "exec.log")
    control = os.path.join(a.work, "sim-control")
    open(control, "w").close()
    faults = a.faults.split(",")
    rnd = random.Random(a.seed)
    seg = (a.steps - a.every - 2) // len(faults)
    plan = []
    for i, f in enumerate(faults):
        lo = a.every + 2 + i * seg
        plan.append((f, rnd.randrange(lo, lo + max(seg // 2, 1))))
    print("plan: " + ", ".join("%s@%d" % p for p in plan))
    eio_args = []
    for attempt, (f, step) in enumerate(plan):
        if f == "eio":
            eio_args = ["--eio-at-step", "%d@%d" % (step, attempt)]

    env = dict(os.environ, MSCALE_SIM_CONTROL=control)
    worker = a.worker or [a.sim, "--data", a.data, "--steps", str(a.steps), "--snapshot-every", str(a.every),
                          "--snapshot-dir", snap_dir, "--log", train_log, "--step-delay-ms", "10", "--quiet"] + eio_args

    def start(resume):
        cmd = [a.exec, "run", "--log", exec_log, "--topology", a.topology] + a.exec_arg + \
              (["--resume"] if resume else []) + [a.plan, "--"] + worker
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    proc = start(False)
    offset = 0
    for f, step in plan:
        if f == "eio":  # fires by itself at its step: wait for the restart it causes
            offset = restart_offset(train_log, offset + 1)
            continue
        if not wait_for_step(train_log, offset, step, proc, a.heartbeat_timeout):
            print("mscale-exec ended (status %s) before step %d of fault %s" % (proc.poll(), step, f))
            return 1
        if a.wait_standby and f != "node-loss" and not wait_for_standby(exec_log, proc):
            print("no warm standby ready before fault %s at step %d" % (f, step))
            return 1
        before = log_size(train_log)
        if f == "kill9":
            os.kill(worker_of(exec_log, a.victim), signal.SIGKILL)
        elif f == "gpu":
            with open(control, "a") as c:
                c.write("gpu 0 fault lost\n")
        elif f == "rdma":
            with open(control, "a") as c:
                c.write("rdma mlx5_0 1 down\n")
        elif f == "hang":
            os.kill(worker_of(exec_log, a.victim), signal.SIGSTOP)
        elif f == "node-loss":
            proc.kill()
            proc.wait()
            time.sleep(0.05)  # PR_SET_PDEATHSIG takes the worker down with its executor
            victim = newest_disk_snapshot(snap_dir)
            corrupt_first_blob(victim)
            with open(control, "w") as c:
                c.write("# a new node: every GPU and port healthy\n")
            print("fault node-lost at step %d: killed mscale-exec, corrupted %s" % (max(steps_logged(train_log, offset)), os.path.basename(victim)))
            proc = start(True)
        offset = restart_offset(train_log, before)
    rc = proc.wait()
    with open(exec_log) as log:
        for line in log:
            for key in (" fault ", "moved off lost gpu", "rdma failover:", "recovered from", "worker completed",
                        "resuming after a lost node", "standby worker",
                        "error["):
                if key in line and " ready: " not in line:
                    print(line.split(": ", 1)[1].rstrip() if " contract=" in line else line.rstrip())
                    break
    print("mscale-exec exited with %d" % rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
