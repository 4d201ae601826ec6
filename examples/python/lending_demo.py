#!/usr/bin/python3
"""lending_demo.sh's driver (issue 27): the example training job alone, then with two borrowers on the
CPU it lends while it computes, under one node agent; what the node did, measured.

    lending_demo.py --work DIR --owner OWNER.msp --preprocess PRE.msp --infer INF.msp \\
        --data TRAIN_SET --next NEXT_SET --steps N

Each run trains N steps from the same seed (snapshots every 10 steps, as the plan says). The window
measured is the same steps of both runs, from a quarter of N to N-5: before it the job starts (torch's
import, its loader) and the borrowers theirs; the owner keeps everything until it enters its first
phase. Over the window:

- node utilisation: the busy time of the owner's CPUs (every state of /proc/stat's cpuN lines but
  idle and iowait) over their wall time, whatever runs there;
- the jobs' utilisation: the CPU time (utime + stime, with reaped children's) of the owner's and the
  borrowers' process trees from /proc/PID/stat, over the same; unlike the first, it does not count
  what else runs on the machine;
- the borrowers' work: images preprocessed and captioned (their progress snapshots) in the window.

While the owner computes, the node (``mscale-cli node loans``) must lend its loader's CPU to the
borrowers and their threads (read from /proc, not taken from the agent) must be runnable there; at
the end ``contract status`` and the agent's metrics give the phase entries, reclaims and missed
deadlines. The owner's per-step losses and final parameters must be equal in both runs. Every process
it starts is ended in ``finally``, on any failure or signal too; the agent's pid is in DIR/agent.pid
for lending_demo.sh's trap.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Dict, List, Optional, Set, Tuple

OWNER, PREPROCESS, INFER = "tiny_vlm", "example_preprocess", "example_infer"
HERE = os.path.dirname(os.path.abspath(__file__))


class Failed(Exception):
    pass


class Agent:
    def __init__(self, work: str, log: str = "agent.log") -> None:
        self.work = work
        self.sock = os.path.join(work, "agent.sock")
        self.metrics = os.path.join(work, "metrics.sock")
        config = os.path.join(work, "node.yaml")
        with open(config, "w") as f:
            f.write("state_dir: %s\n" % os.path.join(work, "state"))
        self.log = open(os.path.join(work, log), "w")
        self.proc = subprocess.Popen(["mscale-exec", "serve", "--socket", self.sock, "--config", config,
                                      "--metrics", "unix:" + self.metrics],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        with open(os.path.join(work, "agent.pid"), "w") as f:
            f.write("%d\n" % self.proc.pid)
        for _ in range(100):
            if os.path.exists(self.sock) and os.path.exists(self.metrics):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise Failed("the agent did not listen within 10 s (%s)" % os.path.join(work, "agent.log"))

    def cli(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        try:
            r = subprocess.run(["mscale-cli", *args[:2], "--socket", self.sock, *args[2:]], capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failed("mscale-cli %s: no answer from the agent within %d s" % (" ".join(args[:3]), timeout))
        if check and r.returncode != 0:
            raise Failed("mscale-cli %s: %s" % (" ".join(args[:3]), r.stderr.strip()))
        return r

    def worker_pid(self, contract: str) -> Optional[int]:
        for line in self.cli("contract", "status", contract, check=False).stdout.splitlines():
            words = line.split()
            if words[:2] == ["worker", "running"] and "pid" in words:
                return int(words[words.index("pid") + 1])
        return None

    def metric(self, name: str) -> List[str]:
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.metrics)
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        text = s.makefile().read()
        s.close()
        return [line for line in text.splitlines() if line.startswith(name)]

    def stop(self, cleanup: bool = True) -> None:
        for contract in (PREPROCESS, INFER, OWNER):
            try:
                self.cli("contract", "release", contract, check=False, timeout=10)
            except Failed:
                break
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
                return
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # An agent that had to be killed leaves its borrowers' cgroups (and a frozen worker in them):
        # the next agent on the same state directory ends what is left of them (WRN_EXEC_005).
        if cleanup:
            for path in (self.sock, self.metrics):
                if os.path.exists(path):
                    os.unlink(path)
            Agent(self.work, "agent-cleanup.log").stop(cleanup=False)


# ---- what /proc says ---------------------------------------------------------------------------

def cpu_busy(cpus: List[int]) -> float:
    """Seconds the CPUs were busy since boot (/proc/stat: all but idle and iowait)."""
    tick = os.sysconf("SC_CLK_TCK")
    busy = 0
    for line in open("/proc/stat"):
        name, *values = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            v = [int(x) for x in values]
            busy += sum(v) - v[3] - v[4]
    return busy / tick


def stat_of(pid: int) -> Optional[List[str]]:
    try:
        text = open("/proc/%d/stat" % pid).read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def tree(root: int) -> List[int]:
    parents: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = stat_of(int(entry))
            if s:
                parents.setdefault(int(s[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += parents.get(pid, [])
    return out


def tree_cpu(root: Optional[int]) -> float:
    """CPU seconds of a process tree: each process's utime + stime and its reaped children's."""
    if root is None:
        return 0.0
    total = 0
    for pid in tree(root):
        s = stat_of(pid)
        if s:
            total += sum(int(x) for x in s[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def cgroup_cpu_file(pid: Optional[int]) -> Optional[str]:
    """The cpu.stat of the cgroup2 group the agent put `pid` in (every group has one: usage_usec)."""
    if pid is None:
        return None
    mount = None
    for line in open("/proc/mounts"):
        fields = line.split()
        if fields[2] == "cgroup2":
            mount = fields[1]
    try:
        path = [l[3:].strip() for l in open("/proc/%d/cgroup" % pid) if l.startswith("0::")][0]
    except (OSError, IndexError):
        return None
    stat = os.path.join(mount, path.lstrip("/"), "cpu.stat") if mount else ""
    return stat if mount and path != "/" and os.path.exists(stat) else None


def contract_cpu(pid: Optional[int], stat: Optional[str]) -> float:
    """CPU seconds of a contract: its cgroup's usage_usec (whatever restarts and forks), else its
    worker's process tree."""
    if stat:
        try:
            for line in open(stat):
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except OSError:
            pass
    return tree_cpu(pid)


def runnable_on(root: Optional[int], cpu: int) -> bool:
    """Whether a thread of the tree is running or runnable with `cpu` among those it may run on."""
    if root is None:
        return False
    for pid in tree(root):
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                stat = open("/proc/%d/task/%s/stat" % (pid, tid)).read()
                status = open("/proc/%d/task/%s/status" % (pid, tid)).read()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2] != "R":
                continue
            for line in status.splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    for part in line.split(":")[1].strip().split(","):
                        lo, _, hi = part.partition("-")
                        if int(lo) <= cpu <= int(hi or lo):
                            return True
    return False


def progress(directory: str) -> int:
    try:
        return json.load(open(os.path.join(directory, "progress.json")))["done"]
    except (OSError, ValueError, KeyError):
        return 0


# ---- one run -----------------------------------------------------------------------------------

class LogFollower:
    def __init__(self, path: str) -> None:
        self.path, self.offset, self.step, self.final = path, 0, 0, False

    def poll(self) -> None:
        try:
            with open(self.path) as f:
                f.seek(self.offset)
                text = f.read()
        except OSError:
            return
        complete = text[:text.rfind("\n") + 1]
        self.offset += len(complete)
        for line in complete.splitlines():
            if line.startswith("step "):
                self.step = int(line.split()[1])
            elif line.startswith("final "):
                self.final = True


def run(agent: Agent, a: argparse.Namespace, name: str, borrowers: bool) -> Dict[str, object]:
    directory = os.path.join(a.work, name)
    os.makedirs(directory)
    log = os.path.join(directory, "train.log")
    command = ["/usr/bin/python3", os.path.join(HERE, "train.py"), "--data", a.data, "--steps", str(a.steps),
               "--log", log, "--snapshot-dir", os.path.join(directory, "snaps")]
    if not borrowers:
        command += ["--model-out", os.path.join(a.work, "model.pt")]
    agent.cli("contract", "submit", a.owner, "--", *command)
    started = time.monotonic()
    pre_out, inf_out = os.path.join(directory, "preprocess"), os.path.join(directory, "infer")
    next_images = len(open(os.path.join(a.next, "index.tsv")).read().splitlines()) - 1
    # One lent CPU goes to one borrower at a time (the node lends in admission order), so the two run
    # one after the other: the preprocessing of the next set, then captions of it. The second is
    # submitted once the first is released (before, it would only wait frozen, and its captions
    # need the preprocessed set).
    if borrowers:
        agent.cli("contract", "submit", a.preprocess, "--", "/usr/bin/python3",
                  os.path.join(HERE, "borrow_preprocess.py"), "--data", a.next, "--out", pre_out)
    first, last = max(5, a.steps // 4), a.steps - 5
    follow = LogFollower(log)
    pids: Dict[str, Optional[int]] = {OWNER: agent.worker_pid(OWNER)}
    if borrowers:
        pids[PREPROCESS] = agent.worker_pid(PREPROCESS)
    cpu_begin: Dict[str, float] = {}  # CPU seconds of each contract's tree when the window began
    cpu_last: Dict[str, float] = {}   # ... when last seen in it (a released borrower's final count)
    begin: Tuple[float, float, int, int] = (0, 0, 0, 0)
    result: Dict[str, object] = {"lent": False, "runnable": False}
    loans_seen: Set[str] = set()
    checks = 0

    stats: Dict[str, Optional[str]] = {}

    def sample(contracts: List[str]) -> None:
        for c in contracts:
            if stats.get(c) is None:
                stats[c] = cgroup_cpu_file(pids.get(c))
            cpu_last[c] = contract_cpu(pids.get(c), stats[c])
            if not begin[0]:
                cpu_begin[c] = cpu_last[c]

    while not follow.final:
        if time.monotonic() - started > a.timeout:
            raise Failed("%s: the owner did not finish %d steps within %d s (at step %d)" % (
                name, a.steps, a.timeout, follow.step))
        if agent.proc.poll() is not None:
            raise Failed("the agent ended (%s)" % os.path.join(a.work, "agent.log"))
        time.sleep(0.05)
        follow.poll()
        if borrowers and INFER not in pids and progress(pre_out) >= next_images:
            sample([PREPROCESS])
            agent.cli("contract", "release", PREPROCESS)
            agent.cli("contract", "submit", a.infer, "--", "/usr/bin/python3", os.path.join(HERE, "borrow_infer.py"),
                      "--model", os.path.join(a.work, "model.pt"), "--data", a.next, "--out", inf_out)
            pids[INFER] = agent.worker_pid(INFER)
            if begin[0]:
                cpu_begin[INFER] = 0.0  # it started inside the window
        if follow.step >= first and not begin[0]:
            sample([c for c in pids if c != PREPROCESS or INFER not in pids])
            begin = (time.monotonic(), cpu_busy(a.cpus), progress(pre_out), progress(inf_out))
        elif begin[0] and "end" not in result and follow.step >= last:
            sample([c for c in pids if c != PREPROCESS or INFER not in pids])
            wall = time.monotonic() - begin[0]
            jobs = sum(cpu_last[c] - cpu_begin.get(c, 0.0) for c in cpu_last)
            result.update(end=True, wall=wall, node=(cpu_busy(a.cpus) - begin[1]) / (wall * len(a.cpus)),
                          jobs=jobs / (wall * len(a.cpus)), preprocessed=progress(pre_out) - begin[2],
                          captioned=progress(inf_out) - begin[3])
        elif borrowers and begin[0] and "end" not in result and checks < 3 and follow.step >= first + 5 * (checks + 1):
            # Inside the window, three looks: what the node says it lends, and whether a borrower's
            # thread could run on the loader's CPU (from /proc).
            # A loan lasts while the owner computes: one look may fall in a decode phase, so each look
            # asks again for up to a second, until it sees the loader's CPU lent.
            checks += 1

            def loader_lent() -> bool:
                for line in agent.cli("node", "loans").stdout.splitlines()[2:]:
                    words = line.split()
                    if len(words) >= 3 and words[0] == OWNER:
                        loans_seen.add("%s CPUs %s" % (words[1], words[2]))
                        result["lent"] = result["lent"] or a.loader_cpu in cpu_list(words[2])
                return bool(result["lent"])
            until(loader_lent, 1.0)
            result["runnable"] = result["runnable"] or any(
                until(lambda p=p: runnable_on(p, a.loader_cpu), 0.5) for c, p in pids.items() if c != OWNER)
    if "end" not in result:
        raise Failed("%s: the window of steps %d..%d was not measured" % (name, first, last))
    result["window"] = (first, last)
    result["loans"] = sorted(loans_seen)
    if borrowers:
        status = agent.cli("contract", "status", OWNER).stdout
        result["status"] = [l.strip() for l in status.splitlines() if l.split()[:1] in (["phase"], ["reclaims"])]
        result["metrics"] = [m for name_ in ("mscale_lending_phase_entries_total", "mscale_lending_reclaims_total",
                                             "mscale_lending_missed_deadlines_total",
                                             "mscale_lending_harvested_core_seconds_total")
                             for m in agent.metric(name_)]
        result["total_preprocessed"], result["total_captioned"] = progress(pre_out), progress(inf_out)
        for contract in (PREPROCESS, INFER):
            agent.cli("contract", "release", contract, check=False)
    agent.cli("contract", "release", OWNER, check=False)
    result["log"] = log
    result["accounting"] = "cgroups' cpu.stat" if all(stats.values()) else "their process trees"
    return result


def cpu_list(text: str) -> Set[int]:
    out: Set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit():
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def until(holds, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if holds():
            return True
        time.sleep(0.005)
    return holds()


def history(path: str) -> List[str]:
    """The log's effective history, what must be equal with and without borrowers: each step's line as
    last written (a worker the supervisor restarted replays steps from its snapshot), then the final
    line."""
    steps: Dict[int, str] = {}
    final = []
    for line in open(path).read().splitlines():
        if line.startswith("step "):
            steps[int(line.split()[1])] = line
        elif line.startswith("final "):
            final = [line]
    return [steps[k] for k in sorted(steps)] + final


def restarts(path: str) -> List[str]:
    return [l[2:] for l in open(path).read().splitlines() if l.startswith("# restart")]


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("work", "owner", "preprocess", "infer", "data", "next"):
        ap.add_argument("--" + name, required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--cpus", default="0,1", help="the owner's CPUs, over which utilisation is measured")
    ap.add_argument("--loader-cpu", type=int, default=1, help="the loader's CPU, which is lent")
    ap.add_argument("--timeout", type=int, default=60, help="seconds a run may take at most")
    a = ap.parse_args(argv)
    a.cpus = sorted(cpu_list(a.cpus))
    if a.steps < 30:
        ap.error("--steps must be at least 30 (the window is steps/4..steps-5)")
    # A signal ends the driver through `finally`: the agent, and with it every worker, is stopped.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(128 + 15))
    agent = None
    try:
        agent = Agent(a.work)
        print("== the owner alone: %d steps of train.py (loader CPU %d kept while decoding, lent while computing: "
              "to nobody)" % (a.steps, a.loader_cpu), flush=True)
        alone = run(agent, a, "alone", borrowers=False)
        print("== the owner with two borrowers: borrow_preprocess.py and borrow_infer.py", flush=True)
        lent = run(agent, a, "lent", borrowers=True)
    except Failed as e:
        print("lending demo: FAILED: %s" % e, flush=True)
        return 1
    finally:
        if agent:
            agent.stop()
    print("lent while computing: %s (node loans: %s)" % (lent["lent"], "; ".join(lent["loans"]) or "none"))  # type: ignore
    print("a borrower's thread runnable on CPU %d (from /proc): %s" % (a.loader_cpu, lent["runnable"]))
    print("\n".join(lent["status"]))  # type: ignore
    print("\n".join(lent["metrics"]))  # type: ignore
    first, last = alone["window"]  # type: ignore
    print()
    print("steps %d..%d of %d, on CPUs %s (%.1f s alone, %.1f s with borrowers)" % (
        first, last, a.steps, ",".join(map(str, a.cpus)), alone["wall"], lent["wall"]))
    print("%-38s %12s %16s" % ("", "owner alone", "with borrowers"))
    print("%-38s %11.0f%% %15.0f%%" % ("node utilisation (/proc/stat)", 100 * alone["node"], 100 * lent["node"]))  # type: ignore
    print("%-38s %11.0f%% %15.0f%%" % ("jobs' utilisation (%s)" % lent["accounting"], 100 * alone["jobs"], 100 * lent["jobs"]))  # type: ignore
    print("%-38s %12d %16d" % ("images preprocessed (4 crops each)", 0, lent["preprocessed"]))
    print("%-38s %12d %16d" % ("images captioned", 0, lent["captioned"]))
    print("borrowers' work in all: %d images preprocessed, %d captioned" % (lent["total_preprocessed"], lent["total_captioned"]))
    same = history(alone["log"]) == history(lent["log"])  # type: ignore
    print("owner's losses identical with and without borrowers: %s (%d steps, %s)" % (
        same, a.steps, history(lent["log"])[-1][:40] + "..."))  # type: ignore
    for label, r in (("alone", alone), ("with borrowers", lent)):
        for line in restarts(r["log"]):  # type: ignore
            print("the owner's worker %s: %s (resumed from its snapshot)" % (label, line))
    print("utilisation higher with borrowers: %s" % (lent["jobs"] > alone["jobs"]))  # type: ignore
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
