#!/usr/bin/env python3
"""The cluster's latencies on a real 3-member etcd (run it under scripts/with-etcd.sh):

1. Leader failover: two controllers; the leader SIGKILLed; the time until the standby leads (its
   `leading` line), against etcd's minimum lease TTL (2 s with default timings), which bounds it.
2. Submit to placed and to applied: four node agents serving recorded nodes with the sim backends
   (scripts/cluster/agents-up.sh); `mscale-cli cluster submit` of a 2-node job (it compiles the
   contract, finds the leader through the election and calls its service, which compiles it again
   and writes it fenced) until the leader's /mscale/contract-status/ write is seen by a watcher
   (placed), and until both nodes' agents have written `state applied` to their /mscale/status/ keys
   (plan applied: the agent admitted the assignment, re-checked and applied the plan). Against a
   bare etcd put/watch round trip measured the same way in the same run (etcdctl: a client process
   each time, as mscale-cli is). Medians and P99 over --trials.

usage: scripts/with-etcd.sh bench/cluster/cluster_bench.py --build BUILD --fixture TOPOLOGY [--trials 10]
       [--submit-trials 100]
Prints Markdown tables (medians, P99, max).
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ENDPOINTS = os.environ.get("ETCD_ENDPOINTS", "")


def etcdctl(*args, **kw):
    return subprocess.run(["etcdctl", "--endpoints=" + ENDPOINTS] + list(args), capture_output=True, text=True,
                          check=True, **kw).stdout


class Watcher:
    """`etcdctl watch --prefix P`: when each key's first event arrived, and when each line of its
    values was first seen (a status key is written several times; "state applied" is one line)."""

    def __init__(self, prefix):
        self.seen = {}
        self.lines = {}
        self.proc = subprocess.Popen(["etcdctl", "--endpoints=" + ENDPOINTS, "watch", "--prefix", prefix],
                                     stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self.read, daemon=True).start()
        time.sleep(0.3)  # the watch is established

    def read(self):
        expect_key = False
        key = None
        for line in self.proc.stdout:
            now = time.monotonic()
            line = line.rstrip("\n")
            if line in ("PUT", "DELETE"):
                expect_key = True
            elif expect_key:
                key = line
                self.seen.setdefault(key, now)
                expect_key = False
            elif key is not None:
                self.lines.setdefault((key, line), now)

    def wait(self, key, line=None, timeout=30):
        end = time.monotonic() + timeout
        table, what = (self.seen, key) if line is None else (self.lines, (key, line))
        while what not in table:
            if time.monotonic() > end:
                raise SystemExit("no event for %s %s" % (key, line or ""))
            time.sleep(0.001)
        return table[what]

    def forget(self, prefix):
        for k in [k for k in self.seen if k.startswith(prefix)]:
            del self.seen[k]
        for k in [k for k in self.lines if k[0].startswith(prefix)]:
            del self.lines[k]

    def stop(self):
        self.proc.kill()


def controller(build, name, log):
    return subprocess.Popen([os.path.join(build, "bin", "mscale-controller"), "run", "--name", name],
                            stderr=open(log, "w"))


def leads(log):
    """Whether the controller writing `log` has said it leads."""
    with open(log) as f:
        return "leading" in f.read()


def failover(a, work):
    times = []
    for trial in range(a.trials):
        logs = [os.path.join(work, "f%d-%s.log" % (trial, n)) for n in "AB"]
        procs = [controller(a.build, n, l) for n, l in zip("AB", logs)]
        try:
            while not any(leads(l) for l in logs):
                time.sleep(0.01)
            leader = 0 if leads(logs[0]) else 1
            killed = time.monotonic()
            procs[leader].send_signal(signal.SIGKILL)
            other = logs[1 - leader]
            while not leads(other):
                time.sleep(0.005)
            times.append(time.monotonic() - killed)
        finally:
            for p in procs:
                p.kill()
                p.wait()
        time.sleep(2.5)  # the killed leader's key expires before the next trial
    return times


def cli(build, *args):
    subprocess.run([os.path.join(build, "bin", "mscale-cli")] + list(args), capture_output=True, text=True,
                   check=True, env=dict(os.environ, ETCD_ENDPOINTS=ENDPOINTS))


def submit_to_applied(a, work):
    cluster = os.environ["ETCD_CLUSTER_DIR"]
    here = os.path.dirname(os.path.abspath(__file__))
    scripts = os.path.join(here, "..", "..", "scripts", "cluster")
    subprocess.run([os.path.join(scripts, "agents-up.sh"), cluster, "4", a.fixture], check=True,
                   env=dict(os.environ, MSC_BIN_DIR=os.path.join(a.build, "bin")))
    proc = controller(a.build, "bench", os.path.join(work, "s.log"))
    decided = Watcher("/mscale/contract-status/")
    applied = Watcher("/mscale/status/")
    bare = Watcher("/bench/")
    placed, done, roundtrip = [], [], []
    try:
        while not leads(os.path.join(work, "s.log")):
            time.sleep(0.01)
        for i in range(a.submit_trials):
            name = "b%d" % i
            path = os.path.join(work, name + ".msc")
            with open(path, "w") as f:
                f.write('import "profiles/mlvm.msc";\ncontract %s uses profile mlvm_light {\n  nodes = 2;\n'
                        '  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n' % name)
            start = time.monotonic()
            cli(a.build, "cluster", "submit", path)
            placed.append(decided.wait("/mscale/contract-status/" + name) - start)
            status = etcdctl("get", "--print-value-only", "/mscale/contract-status/" + name).split("\n")[0]
            nodes = status.split()[1].split(",")
            done.append(max(applied.wait("/mscale/status/%s/%s" % (n, name), "state applied") for n in nodes) - start)
            start = time.monotonic()
            etcdctl("put", "/bench/k%d" % i, "v")
            roundtrip.append(bare.wait("/bench/k%d" % i) - start)
            cli(a.build, "cluster", "withdraw", name)  # the leader frees the nodes for the next trial
            while etcdctl("get", "--prefix", "/mscale/status/", "--keys-only").strip():
                time.sleep(0.01)
    finally:
        decided.stop()
        applied.stop()
        bare.stop()
        proc.kill()
        proc.wait()
    return placed, done, roundtrip


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def row(name, values, base=None):
    m = statistics.median(values)
    return "| %s | %.1f ms | %.1f ms | %.1f ms | %s |" % (name, m * 1000, p99(values) * 1000, max(values) * 1000,
                                                          "%.2f" % (m / base) if base else "1.00")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--trials", type=int, default=10, help="failover trials")
    ap.add_argument("--submit-trials", type=int, default=100)
    a = ap.parse_args()
    if not ENDPOINTS:
        raise SystemExit("run under scripts/with-etcd.sh (ETCD_ENDPOINTS)")
    a.build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="cluster-bench-")
    placed, applied, roundtrip = submit_to_applied(a, work)
    print("## Submit to placed and to plan applied (%d trials; 4 agents on recorded nodes, a 2-node job)\n"
          % a.submit_trials)
    print("| path | median | P99 | max | median ratio to the bare round trip |\n|---|---|---|---|---|")
    base = statistics.median(roundtrip)
    print(row("bare etcd put -> watch event (etcdctl)", roundtrip))
    print(row("mscale-cli cluster submit -> placed status event", placed, base))
    print(row("mscale-cli cluster submit -> both agents' `state applied`", applied, base))
    times = failover(a, work)
    print("\n## Leader failover (%d trials; lease TTL 2 s)\n" % a.trials)
    print("| from | median | P99 | max | median ratio to the 2 s TTL |\n|---|---|---|---|---|")
    print(row("leader SIGKILL -> standby leads", times, 2.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
