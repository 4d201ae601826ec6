"""What the lending tests' drivers share: an agent on a socket of the test's directory, mscale-cli
against it, its metrics, and the processes' threads read from /proc (the borrower's side, not the
agent's word). Every agent started here is stopped by stop_agents(), which drivers call in `finally`."""
import os
import socket
import subprocess
import sys
import time


class Agent:
    def __init__(self, directory):
        self.directory = directory
        self.sock = os.path.join(directory, "agent.sock")
        self.metrics = os.path.join(directory, "metrics.sock")
        self.config = os.path.join(directory, "node.yaml")
        self.processes = []

    def start(self, log_name, *extra):
        """`extra`: more of mscale-exec serve's options (a recorded node's --topology)."""
        log = open(os.path.join(self.directory, log_name), "w")
        agent = subprocess.Popen(["mscale-exec", "serve", "--socket", self.sock, "--config", self.config,
                                  "--metrics", "unix:" + self.metrics, *extra],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.processes.append(agent)
        for _ in range(100):
            if os.path.exists(self.sock) and os.path.exists(self.metrics):
                return agent
            time.sleep(0.1)
        sys.exit("the agent did not listen within 10 s")

    def stop(self):
        for agent in self.processes:
            if agent.poll() is None:
                agent.terminate()
                try:
                    agent.wait(10)
                except subprocess.TimeoutExpired:
                    agent.kill()
                    agent.wait()

    def cli(self, *args, check=True, timeout=60):
        """mscale-cli against this agent; an agent that does not answer within `timeout` s ends the test."""
        try:
            r = subprocess.run(["mscale-cli", *args[:2], "--socket", self.sock, *args[2:]], capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            sys.exit("mscale-cli " + " ".join(args) + ": the agent did not answer within %d s" % timeout)
        if check and r.returncode != 0:
            sys.exit("mscale-cli " + " ".join(args) + " failed: " + r.stderr)
        return r

    def worker_pid(self, contract, seconds=20):
        # The worker starts after the submit returns; a sanitizer build on a loaded machine can take
        # seconds to get there.
        end = time.monotonic() + seconds
        while True:
            for line in self.cli("contract", "status", contract).stdout.splitlines():
                words = line.split()
                if words[:2] == ["worker", "running"] and "pid" in words:
                    return int(words[words.index("pid") + 1])
            if time.monotonic() >= end:
                sys.exit("no running worker of " + contract)
            time.sleep(0.05)

    def metric(self, name):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.metrics)
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        text = s.makefile().read()
        s.close()
        return [line for line in text.splitlines() if line.startswith(name)]


def wait_file(directory, name, seconds=60):
    """A file a worker writes once it got somewhere (importing torch takes seconds on a loaded machine)."""
    path = os.path.join(directory, name)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.path.exists(path):
            return path
        time.sleep(0.01)
    sys.exit("no %s within %d s" % (name, seconds))


def until(holds, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if holds():
            return True
        time.sleep(0.001)
    return holds()


def children(pid):
    """The processes whose parent is `pid`, by /proc/<pid>/stat."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(entry))
    return out


def threads_of(pid):
    """(state, allowed CPUs) of each thread of the process `pid` alone, read from /proc."""
    out = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                status = f.read()
        except OSError:
            continue
        allowed = set()
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                for part in line.split(":")[1].strip().split(","):
                    lo, _, hi = part.partition("-")
                    allowed.update(range(int(lo), int(hi or lo) + 1))
        out.append((stat[stat.rindex(")") + 2], allowed))
    return out


def tree(pid):
    """`pid` and every process under it."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p not in out:
            out.append(p)
            todo += children(p)
    return out


def threads(pid):
    """(state, allowed CPUs) of every thread of `pid` and of the processes under it."""
    out = []
    for p in tree(pid):
        out += threads_of(p)
    return out


def runnable_on(pid, cpu):
    """Whether a thread of `pid`'s tree could run on `cpu` now: running or runnable, allowed there."""
    return any(state == "R" and cpu in allowed for state, allowed in threads(pid))
