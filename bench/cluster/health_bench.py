#!/usr/bin/env python3
"""A node's health change to its cordon, on a real 3-member etcd (run it under scripts/with-etcd.sh):

One node agent (`mscale-exec serve`, sim backends) serves a recorded sysfs tree with a thermal zone
(critical at 100 C) and judges its health every --health-interval; one controller leads with the
cluster config's `health: { cordon_on: [failed] }`. Each trial heats the zone to 105 C (a write to
the tree's `temp`) and times, from that write:
  - verdict published: the agent's registration with `# health failed` arriving at an `etcdctl
    watch` that was already running;
  - cordoned: the leader's /mscale/cordons/<node> put arriving at the same kind of watch.
Then the zone is cooled, the node is seen healthy again and uncordoned (`mscale-cli cluster
uncordon`) before the next trial. The bound to read them against is the judging interval (the
agent looks that often) and a bare etcd put/watch round trip measured the same way in the same run.

usage: scripts/with-etcd.sh /usr/bin/python3 bench/cluster/health_bench.py --build BUILD --sysfs TARBALL
       [--trials 50] [--health-interval 200ms]
Prints a Markdown table (medians, P99, max).
"""
import argparse
import os
import subprocess
import statistics
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_bench import ENDPOINTS, Watcher, cli, controller, etcdctl, leads, row  # noqa: E402

NODE = "node1"
CONFIG = "# mscale cluster config; written by bench\ncluster: bench\nhealth:\n  cordon_on: [failed]\n"


def interval_seconds(text):
    for unit, scale in (("ms", 1e-3), ("s", 1.0)):
        if text.endswith(unit) and text[:-len(unit)].isdigit():
            return int(text[:-len(unit)]) * scale
    raise SystemExit("--health-interval: '%s' is not a duration such as 200ms or 1s" % text)


def serve_node(a, work):
    """The agent on the extracted tree, with a thermal zone it reads at 45 C; its zone's directory."""
    with tarfile.open(a.sysfs) as t:
        t.extractall(work)
        root = os.path.join(work, t.getnames()[0].split("/")[0])
    zone = os.path.join(root, "sys/class/thermal/thermal_zone0")
    os.makedirs(zone, exist_ok=True)
    for name, value in (("type", "x86_pkg_temp"), ("trip_point_0_type", "critical"),
                        ("trip_point_0_temp", "100000"), ("temp", "45000")):
        with open(os.path.join(zone, name), "w") as f:
            f.write(value + "\n")
    config = os.path.join(work, "node.yaml")
    with open(config, "w") as f:
        f.write("gpu_backend: sim\nrdma: { enabled: true, backend: sim }\nhost_backend: sim\n"
                "state_dir: %s\nclaims_dir: %s\n" % (os.path.join(work, "state"), os.path.join(work, "claims")))
    agent = subprocess.Popen([os.path.join(a.build, "bin", "mscale-exec"), "serve", "--endpoints", ENDPOINTS,
                              "--node", NODE, "--topology", root, "--config", config,
                              "--socket", os.path.join(work, "agent.sock"), "--lease-ttl", "2s",
                              "--health-interval", a.health_interval],
                             stderr=open(os.path.join(work, "agent.log"), "w"))
    return agent, zone


def set_temp(zone, millidegrees):
    with open(os.path.join(zone, "temp"), "w") as f:
        f.write("%d\n" % millidegrees)


def wait_for(holds, what, seconds=30):
    end = time.monotonic() + seconds
    while not holds():
        if time.monotonic() > end:
            raise SystemExit("bench: %s not seen within %d s" % (what, seconds))
        time.sleep(0.01)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--sysfs", required=True, help="a recorded sysfs tarball (../shared/fixtures/topologies/sysfs)")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--health-interval", default="200ms")
    a = ap.parse_args()
    if not ENDPOINTS:
        raise SystemExit("run under scripts/with-etcd.sh (ETCD_ENDPOINTS)")
    a.build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="health-bench-")
    etcdctl("put", "/mscale/config", CONFIG)
    node_key, cordon_key = "/mscale/nodes/" + NODE, "/mscale/cordons/" + NODE
    agent, zone = serve_node(a, work)
    leader = controller(a.build, "bench", os.path.join(work, "c.log"))
    nodes, cordons, bare = Watcher("/mscale/nodes/"), Watcher("/mscale/cordons/"), Watcher("/bench/")
    published, cordoned, roundtrip = [], [], []
    try:
        wait_for(lambda: leads(os.path.join(work, "c.log")), "a leader")
        wait_for(lambda: "# health healthy" in etcdctl("get", "--print-value-only", node_key), "the node healthy")
        for i in range(a.trials):
            nodes.forget(node_key)
            cordons.forget(cordon_key)
            start = time.monotonic()
            set_temp(zone, 105000)
            published.append(nodes.wait(node_key, "# health failed") - start)
            cordoned.append(cordons.wait(cordon_key) - start)
            start = time.monotonic()
            etcdctl("put", "/bench/k%d" % i, "v")
            roundtrip.append(bare.wait("/bench/k%d" % i) - start)
            set_temp(zone, 45000)
            nodes.wait(node_key, "# health healthy")
            cli(a.build, "cluster", "uncordon", NODE)
            wait_for(lambda: not etcdctl("get", "--print-value-only", cordon_key).strip(), "the uncordon")
            time.sleep(0.2)  # the delete reaches the watch before it is forgotten
    finally:
        for w in (nodes, cordons, bare):
            w.stop()
        for p in (leader, agent):
            p.kill()
            p.wait()
    base = statistics.median(roundtrip)
    print("## A node's health change to its cordon (%d trials; the agent judges every %s)\n"
          % (a.trials, a.health_interval))
    print("| from the zone's heating to | median | P99 | max | median ratio to the judging interval |")
    print("|---|---|---|---|---|")
    interval = interval_seconds(a.health_interval)
    print(row("`# health failed` published (registration event)", published, interval))
    print(row("cordoned by policy (/mscale/cordons/ event)", cordoned, interval))
    print(row("bare etcd put -> watch event (etcdctl), for scale", roundtrip, interval))
    print("\npublished -> cordoned alone: median %.1f ms (%.2f x the bare round trip %.1f ms)"
          % (statistics.median([c - p for c, p in zip(cordoned, published)]) * 1000,
             statistics.median([c - p for c, p in zip(cordoned, published)]) / base, base * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
