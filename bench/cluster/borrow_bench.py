#!/usr/bin/env python3
"""What a loan taken back for good costs a borrower: its move to another lending node, against a
guaranteed job's submit-to-placed in the same run.

Run it under scripts/with-etcd.sh with node agents serving recorded nodes (sim backends):

    scripts/with-etcd.sh --controllers 1 --agents 2 \\
        --node-topology ../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml -- \\
        /usr/bin/python3 bench/cluster/borrow_bench.py --build build [--moves 6] [--step-ms 50]

Two owners whose phases lend their loader's CPUs (test/lit/cluster/Inputs/phase_owner.py: decode
20 ms, compute 80 ms, step after step), one on each node; a borrower (mscale-train-sim, snapshots
every 10 steps on the shared storage) submitted with --class opportunistic trains for good. Then
--moves times: the owner of the borrower's node is withdrawn (its loan taken back for good), the
leader places the borrower on the other node, where it resumes from its snapshot; the owner is
submitted again on its node. For each move: withdraw to the borrower placed again, the training
paused (its last step before the move to the first step newer than any before it) and the steps
run twice. The baseline: `cluster submit` of a guaranteed one-node job to placed, as many times.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drain_bench import ENDPOINTS, CLUSTER, Follower, cost, etcdctl, until, wait_steps  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OWNER = ('contract %s {\n  io_topology { loader { cpu_cores = [2, 3]; } }\n  phases {\n'
         '    decode { loader = [cpu]; }\n    compute { loader = []; }\n  }\n'
         '  lending { reclaim_within = 5ms; lead = auto; }\n}\n')
BORROWER = 'contract infer {\n  cpu_cores = 1;\n  memory = 256MiB;\n}\n'
PLAIN = ('import "profiles/mlvm.msc";\ncontract %s uses profile mlvm_light {\n  nodes = 1;\n'
         '  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n')


def placed_on(contract):
    first = etcdctl("get", "--print-value-only", "/mscale/contract-status/" + contract).split("\n")[0]
    m = re.match(r"placed (\S+) ", first)
    return m.group(1).split(",") if m else []


def owners_on(node):
    record = etcdctl("get", "--print-value-only", "/mscale/lending/" + node)
    m = re.search(r"^owners (\d+)$", record, re.M)
    return int(m.group(1)) if m else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True)
    p.add_argument("--moves", type=int, default=6)
    p.add_argument("--step-ms", type=int, default=50)
    a = p.parse_args()
    if not ENDPOINTS or not CLUSTER:
        raise SystemExit("run me under scripts/with-etcd.sh --agents 2 (ETCD_ENDPOINTS, CLUSTER_DIR)")
    bin_dir = os.path.abspath(os.path.join(a.build, "bin"))
    env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"])
    cli = os.path.join(bin_dir, "mscale-cli")
    sim = os.path.join(bin_dir, "mscale-train-sim")
    shared = os.path.join(CLUSTER, "shared")
    work = os.path.join(CLUSTER, "borrow-bench")
    os.makedirs(work, exist_ok=True)
    nodes = sorted(os.listdir(os.path.join(CLUSTER, "agents")))[:2]
    run = lambda *args: subprocess.run([cli, "cluster"] + list(args), check=True, capture_output=True,  # noqa: E731
                                       text=True, env=env)
    owner_cmd = ["env", "PYTHONPATH=" + os.path.join(REPO, "python"), "MSCALE_BIN=" + bin_dir, "/usr/bin/python3",
                 os.path.join(REPO, "test/lit/cluster/Inputs/phase_owner.py"), "100000"]

    def submit_owner(name, node):
        """`name` placed on `node` (the other node cordoned meanwhile), lending once it is published."""
        with open("%s/%s.msc" % (work, name), "w") as f:
            f.write(OWNER % name)
        others = [n for n in nodes if n != node]
        for n in others:
            run("cordon", n, "--reason", "an owner for " + node)
        run("submit", "%s/%s.msc" % (work, name), "--", *owner_cmd)
        until(name + " lending on " + node, 30, lambda: owners_on(node) >= 1)
        for n in others:
            run("uncordon", n)

    owner_of = {}
    for i, node in enumerate(nodes):
        owner_of[node] = "lender%d" % i
        submit_owner(owner_of[node], node)

    subprocess.run([sim, "--gen-data", shared + "/data", "--samples", "480", "--files", "6"], check=True,
                   capture_output=True)
    with open(work + "/infer.msc", "w") as f:
        f.write(BORROWER)
    log = shared + "/infer.log"
    run("submit", work + "/infer.msc", "--class", "opportunistic", "--", sim, "--data", shared + "/data",
        "--steps", "1000000", "--snapshot-dir", shared + "/infer.snap", "--snapshot-every", "10",
        "--no-memory-tier", "--step-delay-ms", str(a.step_ms), "--log", log, "--quiet")
    follower = Follower(log)
    until("the borrower placed", 30, lambda: placed_on("infer"))
    until("the borrower training", 60, lambda: follower.newest_step() >= 30)

    moves = []
    for i in range(a.moves):
        node = placed_on("infer")[0]
        mark = len(follower.lines)
        t0 = time.monotonic()
        run("withdraw", owner_of[node])
        until("the borrower placed again", 30, lambda: (lambda n: n and node not in n)(placed_on("infer")))
        moved = time.monotonic() - t0
        paused, replayed = until("the borrower training again", 60, lambda: cost(follower, mark))
        moves.append((moved, paused, replayed))
        until("the owner gone", 30, lambda: not placed_on(owner_of[node]))
        owner_of[node] = "lender%d" % (len(nodes) + i)
        submit_owner(owner_of[node], node)
        wait_steps(follower, 15)
    follower.done = True
    run("withdraw", "infer")

    submits = []
    for i in range(a.moves):
        name = "plain%d" % i
        with open("%s/%s.msc" % (work, name), "w") as f:
            f.write(PLAIN % name)
        t0 = time.monotonic()
        run("submit", "%s/%s.msc" % (work, name), "--", "/bin/sleep", "600")
        until(name + " placed", 30, lambda: placed_on(name))
        submits.append(time.monotonic() - t0)
        run("withdraw", name)

    med = statistics.median
    print("| what (step time %d ms, snapshots every 10 steps) | trials | to placed (median) | training paused "
          "(median) | steps run twice |" % a.step_ms)
    print("|---|---|---|---|---|")
    print("| borrower's loan taken back for good: owner withdrawn | %d | %.2f s | %.2f s | %s |" % (
        len(moves), med([m[0] for m in moves]), med([m[1] for m in moves]), ",".join(str(m[2]) for m in moves)))
    print("| baseline: `cluster submit` of a guaranteed one-node job | %d | %.2f s | - | - |" % (
        len(submits), med(submits)))
    print("ratio, borrower moved / guaranteed submitted: %.1f" % (med([m[0] for m in moves]) / med(submits)))


if __name__ == "__main__":
    sys.exit(main())
