#!/usr/bin/env python3
"""What moving a job costs it: a planned drain against a lost node, on the same job in the same run.

Run it under scripts/with-etcd.sh with node agents serving recorded nodes (sim backends):

    scripts/with-etcd.sh --controllers 1 --agents 4 --agent-lease-ttl 2s \\
        --node-topology ../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml -- \\
        /usr/bin/python3 bench/cluster/drain_bench.py --build build [--drains 4] [--step-ms 50]

A two-node mscale-train-sim job (snapshots every 10 steps on the storage the nodes share) trains
for good. Rank 0's log is followed line by line, each line stamped when it appears. Then:
  - --drains times: `mscale-cli cluster drain NODE` of rank 0's node (the command waits until the
    job moved), then `uncordon` it;
  - once: rank 0's node lost, its agent SIGKILLed (its worker dies with it), the job placed again
    after the lease expired.
For each move: the training paused (the last step line before the move to the first step line
that is new after it: replayed steps are not progress), the steps run twice, and for a drain the
time from the command to the job placed again (the job trains meanwhile, up to the step the leader
chose ahead). Prints a Markdown table (medians over the drains; the loss is one trial a run).
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

ENDPOINTS = os.environ.get("ETCD_ENDPOINTS", "")
CLUSTER = os.environ.get("CLUSTER_DIR", "")
CONTRACT = ('import "profiles/mlvm.msc";\ncontract train uses profile mlvm_light {\n  nodes = 2;\n'
            '  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n')
STEP = re.compile(r"^step (\d+) ")


def etcdctl(*args):
    return subprocess.run(["etcdctl", "--endpoints=" + ENDPOINTS] + list(args), capture_output=True, text=True,
                          check=True).stdout


def placement():
    """The job's nodes in rank order, or [] while it is not placed."""
    first = etcdctl("get", "--print-value-only", "/mscale/contract-status/train").split("\n")[0]
    m = re.match(r"placed (\S+) ", first)
    return m.group(1).split(",") if m else []


def until(what, timeout, check):
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise SystemExit("timed out waiting for " + what)
        time.sleep(0.02)


class Follower:
    """Rank 0's log, each line stamped with when it was first seen (polled every 2 ms)."""

    def __init__(self, path):
        self.path, self.lines, self.done = path, [], False
        threading.Thread(target=self.follow, daemon=True).start()

    def follow(self):
        while not os.path.exists(self.path):
            time.sleep(0.002)
        with open(self.path) as f:
            partial = ""
            while not self.done:
                chunk = f.read()
                if not chunk:
                    time.sleep(0.002)
                    continue
                now = time.monotonic()
                partial += chunk
                *complete, partial = partial.split("\n")
                self.lines.extend((now, line) for line in complete)

    def steps(self, since=0):
        return [(t, int(m.group(1)), i) for i, (t, line) in enumerate(self.lines[since:], since)
                if (m := STEP.match(line))]

    def newest_step(self):
        s = self.steps(max(0, len(self.lines) - 50))
        return s[-1][1] if s else 0


def resume_line(follower, mark):
    """The index of the first '# resume' line from `mark` on, or None."""
    return next((i for i in range(mark, len(follower.lines)) if follower.lines[i][1].startswith("# resume")), None)


def cost(follower, mark):
    """Of the move after line `mark`: the training paused (the last step line before the job's
    resume line to the first step newer than any before it) and the steps run twice; None until
    the job got past where it was."""
    resume = resume_line(follower, mark)
    if resume is None:
        return None
    before = [s for s in follower.steps(0) if s[2] < resume]
    newest, t_last = before[-1][1], before[-1][0]
    after = follower.steps(resume)
    first_new = next((s for s in after if s[1] > newest), None)
    if first_new is None:
        return None
    return first_new[0] - t_last, sum(1 for s in after if s[1] <= newest)


def wait_steps(follower, n):
    target = follower.newest_step() + n
    until("%d more steps" % n, 120, lambda: follower.newest_step() >= target)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True)
    p.add_argument("--drains", type=int, default=4)
    p.add_argument("--step-ms", type=int, default=50)
    a = p.parse_args()
    if not ENDPOINTS or not CLUSTER:
        raise SystemExit("run me under scripts/with-etcd.sh --agents 4 (ETCD_ENDPOINTS, CLUSTER_DIR)")
    bin_dir = os.path.abspath(os.path.join(a.build, "bin"))
    cli = os.path.join(bin_dir, "mscale-cli")
    sim = os.path.join(bin_dir, "mscale-train-sim")
    shared = os.path.join(CLUSTER, "shared")
    work = os.path.join(CLUSTER, "drain-bench")
    os.makedirs(work, exist_ok=True)
    subprocess.run([sim, "--gen-data", shared + "/data", "--samples", "480", "--files", "6"], check=True,
                   capture_output=True)
    with open(work + "/train.msc", "w") as f:
        f.write(CONTRACT)
    log = shared + "/train.log"
    subprocess.run([cli, "cluster", "submit", work + "/train.msc", "--", sim, "--data", shared + "/data",
                    "--steps", "1000000", "--snapshot-dir", shared + "/train.snap", "--snapshot-every", "10",
                    "--no-memory-tier", "--step-delay-ms", str(a.step_ms), "--log", log, "--quiet"],
                   check=True, capture_output=True, env=dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"]))
    follower = Follower(log)
    until("the job placed", 30, placement)
    until("the job training", 60, lambda: follower.newest_step() >= 30)

    drains = []
    for _ in range(a.drains):
        node = placement()[0]
        mark = len(follower.lines)
        t0 = time.monotonic()
        out = subprocess.run([cli, "cluster", "drain", node, "--deadline", "60s"], capture_output=True, text=True)
        moved = time.monotonic() - t0
        if out.returncode != 0:
            raise SystemExit("drain of %s: %s%s" % (node, out.stdout, out.stderr))
        paused, replayed = until("the job training again", 60, lambda: cost(follower, mark))
        drains.append((moved, paused, replayed))
        subprocess.run([cli, "cluster", "uncordon", node], check=True, capture_output=True)
        wait_steps(follower, 25)

    # A node lost mid-interval: 5 steps after a snapshot, as a fault lands on average.
    until("a step 5 past a snapshot", 30, lambda: follower.newest_step() % 10 == 5)
    node = placement()[0]
    mark = len(follower.lines)
    with open(os.path.join(CLUSTER, "agents", node, "agent.pid")) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    t0 = time.monotonic()
    until("the job placed again", 60, lambda: (lambda n: n and node not in n)(placement()))
    placed_again = time.monotonic() - t0
    # The lost rank's log simply stops; the job's resume line follows it.
    lost_pause, lost_replayed = until("the job past where it was", 60, lambda: cost(follower, mark))
    follower.done = True
    subprocess.run([cli, "cluster", "withdraw", "train"], capture_output=True)

    med = lambda xs: statistics.median(xs)  # noqa: E731
    print("| move (step time %d ms, snapshots every 10 steps) | trials | training paused (median) | "
          "steps run twice | command to placed again |" % a.step_ms)
    print("|---|---|---|---|---|")
    print("| planned: `cluster drain` | %d | %.2f s | %s | %.2f s (the job trains meanwhile) |" % (
        len(drains), med([d[1] for d in drains]), ",".join(str(d[2]) for d in drains), med([d[0] for d in drains])))
    print("| lost node: agent SIGKILLed, lease 2 s | 1 | %.2f s | %d | %.2f s |" % (
        lost_pause, lost_replayed, placed_again))
    print("ratio of the pauses, lost / drained: %.1f" % (lost_pause / med([d[1] for d in drains])))


if __name__ == "__main__":
    sys.exit(main())
