#!/usr/bin/env python3
"""An elastic job losing a node and getting it back: ours against torchrun, same job, same faults, same run.

Run it under scripts/with-etcd.sh (etcd only; the benchmark starts its own agents and controller):

    scripts/with-etcd.sh -- /usr/bin/python3 bench/cluster/elastic_bench.py --build build \\
        --topology ../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml [--cycles 3]

The job: test/lit/cluster/Inputs/elastic_worker.py (nodes = 2..4, a global batch of 24 samples,
gloo), four "nodes" on this machine. A cycle: once it has trained 30 steps at 4, one node is lost
(its agent and every process under it SIGKILLed), and once it has trained 30 steps at 3, the node
comes back (a new agent). Timed from rank 0's step lines (stamped by the worker):
  - shrink: node lost -> first step at world size 3;
  - grow: node back -> first step at world size 4.
ours: `mscale-exec serve` agents (sim backends, lease 2 s) and one `mscale-controller`: a lost node
is placed again after its lease and the 2 s grace, a node back grows the job at a snapshot boundary.
torchrun: `python3 -m torch.distributed.run --nnodes=2:4` agents (c10d rendezvous on the first one,
which is never the one lost), the worker bench/cluster/torchrun_worker.py: the same job written as
torchrun jobs are (a checkpoint every 4 steps, DistributedSampler's sharding). Debian's torch 1.13
under Python 3.11 cannot parse torchrun's default --redirects/--tee (Std.from_str("0") is None), so
both are given (-r 1 -t 2).
Then, for each, from the job's effective history (each step's last run): the samples lost and
repeated within each epoch, and the steps run more than once. Prints a Markdown table.
"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
INPUTS = os.path.join(ROOT, "test", "lit", "cluster", "Inputs")
sys.path[:0] = [INPUTS, os.path.join(ROOT, "python")]
import elastic_history  # noqa: E402
from elastic_worker import SAMPLES  # noqa: E402

ENDPOINTS = os.environ.get("ETCD_ENDPOINTS", "")
PY = ["/usr/bin/python3"]
# Both snapshot every 4 steps: an epoch is 5 steps (120 samples, 24 a step), so a restart resumes
# inside an epoch, as it does for a job whose checkpoints are by step.
EVERY = "4"
CONTRACT = ('import "profiles/mlvm.msc";\ncontract elastic uses profile mlvm_light {\n  nodes = 2..4;\n'
            '  global_batch = 24 samples;\n  micro_batch = 2 samples;\n  fault_tolerance { heartbeat = 2s; }\n'
            '  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n')


def tree(pid):
    """pid and every process under it."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def lose(proc):
    """A node lost: its agent and everything under it, at once."""
    for p in tree(proc.pid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def rank0_lines(log, since):
    """(time, world) of rank 0's step lines stamped after `since`."""
    out = []
    try:
        with open(log) as f:
            for line in f:
                w = line.split()
                if len(w) > 9 and w[9] == "0" and float(w[1]) > since:
                    out.append((float(w[1]), int(w[7])))
    except FileNotFoundError:
        pass
    return out


def wait_steps(log, since, world, count, timeout):
    end = time.time() + timeout
    while time.time() < end:
        lines = [t for t, w in rank0_lines(log, since) if w == world]
        if len(lines) >= count:
            return lines
        time.sleep(0.1)
    raise SystemExit("timed out waiting for %d steps at world size %d in %s" % (count, world, log))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ours:
    name = "ours (mscale, controller + agents)"

    def __init__(self, work, build, topology):
        self.work, self.topology = work, topology
        self.env = dict(os.environ, PATH=os.path.join(build, "bin") + ":" + os.environ["PATH"],
                        PYTHONPATH=os.path.join(ROOT, "python"), MSCALE_BIN=os.path.join(build, "bin"))
        self.agents, self.log = {}, os.path.join(work, "train.log")
        self.controller = None

    def node(self, name):
        d = os.path.join(self.work, name)
        os.makedirs(os.path.join(d, "state"), exist_ok=True)
        with open(os.path.join(d, "node.yaml"), "w") as f:
            f.write("gpu_backend: sim\nrdma: { enabled: true, backend: sim }\nhost_backend: sim\n"
                    "state_dir: %s/state\nclaims_dir: %s/claims\n" % (d, d))
        self.agents[name] = subprocess.Popen(
            ["mscale-exec", "serve", "--endpoints", ENDPOINTS, "--node", name, "--topology", self.topology,
             "--config", os.path.join(d, "node.yaml"), "--socket", os.path.join(d, "agent.sock"), "--lease-ttl", "2s",
             "--advertise-address", "127.0.0.1"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "agent.log"), "a"), start_new_session=True)

    def start(self):
        for k in range(1, 5):
            self.node("node%d" % k)
        self.controller = subprocess.Popen(["mscale-controller", "run", "--name", "A"], env=self.env,
                                           stderr=open(os.path.join(self.work, "A.log"), "w"), start_new_session=True)
        time.sleep(2)
        path = os.path.join(self.work, "elastic.msc")
        with open(path, "w") as f:
            f.write(CONTRACT)
        subprocess.run(["mscale-cli", "cluster", "submit", path, "--"] + PY +
                       [os.path.join(INPUTS, "elastic_worker.py"), "--log", self.log, "--snapshot-dir",
                        os.path.join(self.work, "snaps"), "--steps", "1000000", "--every", EVERY, "--delay", "0.05"],
                       env=self.env, check=True, stdout=subprocess.DEVNULL)

    def placed(self):
        out = subprocess.run(["etcdctl", "--endpoints=" + ENDPOINTS, "get", "--print-value-only",
                              "/mscale/contract-status/elastic"], capture_output=True, text=True).stdout.split("\n")[0]
        return out.split()[1].split(",") if out.startswith("placed ") else []

    def lose_one(self):
        victim = self.placed()[-1]
        lose(self.agents.pop(victim))
        self.lost = victim

    def bring_back(self):
        self.node(self.lost)

    def stop(self):
        subprocess.run(["mscale-cli", "cluster", "withdraw", "elastic"], env=self.env, capture_output=True)
        time.sleep(2)
        for proc in list(self.agents.values()) + [self.controller]:
            lose(proc)


class Torchrun:
    name = "torchrun --nnodes=2:4 (c10d)"

    def __init__(self, work, build, topology):
        self.work, self.log = work, os.path.join(work, "train.log")
        self.env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        self.port, self.agents, self.count = free_port(), [], 0
        os.makedirs(os.path.join(work, "checkpoint"), exist_ok=True)

    def agent(self):
        self.count += 1
        d = os.path.join(self.work, "agent%d" % self.count)
        os.makedirs(d, exist_ok=True)
        self.agents.append(subprocess.Popen(
            PY + ["-m", "torch.distributed.run", "--nnodes=2:4", "--nproc_per_node=1", "--rdzv_backend=c10d",
                  "--rdzv_endpoint=127.0.0.1:%d" % self.port, "--rdzv_id=bench", "--max_restarts=100",
                  "--monitor_interval=1", "--log_dir", d, "-r", "1", "-t", "2",
                  os.path.join(HERE, "torchrun_worker.py"), "--log", self.log, "--checkpoint",
                  os.path.join(self.work, "checkpoint"), "--steps", "1000000", "--every", EVERY, "--delay", "0.05"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "agent.log"), "w"),
            start_new_session=True))

    def start(self):
        for _ in range(4):
            self.agent()
            time.sleep(0.5)  # the first one hosts the rendezvous

    def lose_one(self):
        lose(self.agents.pop())  # never the first: it hosts the rendezvous store

    def bring_back(self):
        self.agent()

    def stop(self):
        for proc in self.agents:
            lose(proc)


def bench(system, cycles):
    system.start()
    wait_steps(system.log, 0, 4, 30, 120)
    shrink, grow = [], []
    for _ in range(cycles):
        t = time.time()
        system.lose_one()
        first = wait_steps(system.log, t, 3, 1, 300)[0]
        shrink.append(first - t)
        wait_steps(system.log, first, 3, 30, 120)
        t = time.time()
        system.bring_back()
        first = wait_steps(system.log, t, 4, 1, 300)[0]
        grow.append(first - t)
        wait_steps(system.log, first, 4, 30, 120)
    system.stop()
    steps, placements = elastic_history.read(system.log)
    effective = elastic_history.effective(steps, [p[0] for p in placements])
    per_epoch = {}
    for epoch, ids, _, _ in effective.values():
        per_epoch.setdefault(epoch, []).extend(ids)
    whole = [e for e in per_epoch if e < max(per_epoch)]  # the last epoch may be under way
    repeated = sum(len(per_epoch[e]) - len(set(per_epoch[e])) for e in whole)
    lost = sum(SAMPLES - len(set(per_epoch[e])) for e in whole)
    again = sum(1 for by in steps.values() if len(by) > 1)
    return shrink, grow, lost, repeated, again, len(effective)


def p(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--work", default="/tmp/msc-elastic-bench")
    args = ap.parse_args()
    build, topology = os.path.abspath(args.build), os.path.abspath(args.topology)
    subprocess.run(["rm", "-rf", args.work], check=True)
    rows = []
    for kind in (Ours, Torchrun):
        work = os.path.join(args.work, kind.__name__.lower())
        os.makedirs(work)
        shrink, grow, lost, repeated, again, total = bench(kind(work, build, topology), args.cycles)
        rows.append("| %s | %.1f / %.1f | %.1f / %.1f | %d of %d | %d | %d |" % (
            kind.name, statistics.median(shrink), p(shrink, 0.99), statistics.median(grow), p(grow, 0.99),
            again, total, lost, repeated))
        print("%s: shrink %s, grow %s" % (kind.name, ["%.1f" % s for s in shrink], ["%.1f" % g for g in grow]),
              file=sys.stderr)
    print("| system | node lost -> first step at 3, s (P50 / P99 of %d) | node back -> first step at 4, s (P50 / P99) "
          "| steps run again | samples lost | samples repeated |" % args.cycles)
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
