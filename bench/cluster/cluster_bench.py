#!/usr/bin/env python3
"""The cluster's latencies on a real 3-member etcd (run it under scripts/with-etcd.sh):

1. Leader failover: two controllers; the leader SIGKILLed; the time until the standby leads (its
   `leading` line), against etcd's minimum lease TTL (2 s with default timings), which bounds it.
2. Submit to placed: `mscale-cli cluster submit` (which compiles the contract, finds the leader
   through the election and calls its service, which compiles it again and writes it fenced) until
   the leader's fenced /mscale/contract-status/ write is seen by a watcher (4 registered recorded
   nodes), against a bare etcd put/watch round trip measured the same way in the same run (etcdctl:
   a client process each time, as mscale-cli is).

usage: scripts/with-etcd.sh bench/cluster/cluster_bench.py --build BUILD --fixture TOPOLOGY [--trials 10]
Prints Markdown tables (medians, max).
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
    """`etcdctl watch --prefix P`: the time each key's first event arrives."""

    def __init__(self, prefix):
        self.seen = {}
        self.proc = subprocess.Popen(["etcdctl", "--endpoints=" + ENDPOINTS, "watch", "--prefix", prefix],
                                     stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self.read, daemon=True).start()
        time.sleep(0.3)  # the watch is established

    def read(self):
        expect_key = False
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line in ("PUT", "DELETE"):
                expect_key = True
            elif expect_key:
                self.seen.setdefault(line, time.monotonic())
                expect_key = False

    def wait(self, key, timeout=30):
        end = time.monotonic() + timeout
        while key not in self.seen:
            if time.monotonic() > end:
                raise SystemExit("no event for " + key)
            time.sleep(0.001)
        return self.seen[key]

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


def submit_to_placed(a, work):
    yaml = subprocess.run([os.path.join(a.build, "bin", "mscale-cli"), "topology", "export", "--format=yaml",
                           "--input", a.fixture], capture_output=True, text=True, check=True).stdout
    for n in range(4):
        etcdctl("put", "/mscale/nodes/n%d" % n, input="# mscale node registration; agent bench\n" + yaml)
    proc = controller(a.build, "bench", os.path.join(work, "s.log"))
    watcher = Watcher("/mscale/contract-status/")
    bare = Watcher("/bench/")
    placed, roundtrip = [], []
    try:
        while not leads(os.path.join(work, "s.log")):
            time.sleep(0.01)
        for i in range(a.trials):
            source = ('import "profiles/mlvm.msc";\ncontract b%d uses profile mlvm_light {\n  nodes = 2;\n'
                      '  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n' % i)
            path = os.path.join(work, "b%d.msc" % i)
            with open(path, "w") as f:
                f.write(source)
            start = time.monotonic()
            cli(a.build, "cluster", "submit", path)
            placed.append(watcher.wait("/mscale/contract-status/b%d" % i) - start)
            start = time.monotonic()
            etcdctl("put", "/bench/k%d" % i, "v")
            roundtrip.append(bare.wait("/bench/k%d" % i) - start)
            cli(a.build, "cluster", "withdraw", "b%d" % i)  # the leader frees the nodes for the next trial
            while etcdctl("get", "--prefix", "/mscale/assignments/", "--keys-only").strip():
                time.sleep(0.01)
    finally:
        watcher.stop()
        bare.stop()
        proc.kill()
        proc.wait()
    return placed, roundtrip


def row(name, values, base=None):
    m = statistics.median(values)
    return "| %s | %.1f ms | %.1f ms | %s |" % (name, m * 1000, max(values) * 1000,
                                                "%.2f" % (m / base) if base else "1.00")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--trials", type=int, default=10)
    a = ap.parse_args()
    if not ENDPOINTS:
        raise SystemExit("run under scripts/with-etcd.sh (ETCD_ENDPOINTS)")
    a.build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="cluster-bench-")
    placed, roundtrip = submit_to_placed(a, work)
    print("## Submit to placed (%d trials; 4 registered nodes)\n" % a.trials)
    print("| path | median | max | ratio to the bare round trip |\n|---|---|---|---|")
    base = statistics.median(roundtrip)
    print(row("bare etcd put -> watch event (etcdctl)", roundtrip))
    print(row("mscale-cli cluster submit -> placed status event", placed, base))
    times = failover(a, work)
    print("\n## Leader failover (%d trials; lease TTL 2 s)\n" % a.trials)
    print("| from | median | max | ratio to the 2 s TTL |\n|---|---|---|---|")
    print(row("leader SIGKILL -> standby leads", times, 2.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
