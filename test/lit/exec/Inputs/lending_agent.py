# lending-agent.test's driver: a node agent lends what an owner's phase does not keep to a borrower
# and takes it back when the owner enters the phase that keeps it; an agent killed with a borrower
# running is followed by one that ends it. What is promised is checked from the borrower's side
# (its threads in /proc), not from what the agent reports. Every process it starts is ended in
# `finally`, whatever fails.
#
#   lending_agent.py DIR OWNER.msp BORROWER.msp BIG.msp OWNER_WORKER.py
import os
import signal
import subprocess
import sys
import time

directory, owner_plan, borrower_plan, big_plan, owner_worker = sys.argv[1:6]
sock = os.path.join(directory, "agent.sock")
metrics = os.path.join(directory, "metrics.sock")
config = os.path.join(directory, "node.yaml")
agents = []
orphans = []  # workers an agent killed with SIGKILL left behind


def start_agent(log_name):
    log = open(os.path.join(directory, log_name), "w")
    agent = subprocess.Popen(["mscale-exec", "serve", "--socket", sock, "--config", config,
                              "--metrics", "unix:" + metrics],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    agents.append(agent)
    for _ in range(100):
        if os.path.exists(sock) and os.path.exists(metrics):
            return agent
        time.sleep(0.1)
    sys.exit("the agent did not listen within 10 s")


def cli(*args, check=True):
    r = subprocess.run(["mscale-cli", *args[:2], "--socket", sock, *args[2:]], capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit("mscale-cli " + " ".join(args) + " failed: " + r.stderr)
    return r


def worker_pid(contract):
    for line in cli("contract", "status", contract).stdout.splitlines():
        words = line.split()
        if words[:2] == ["worker", "running"] and "pid" in words:
            return int(words[words.index("pid") + 1])
    sys.exit("no running worker of " + contract)


def wait_file(name):
    # The owner's worker imports the mscale package (and torch with it): seconds on a loaded machine.
    for _ in range(6000):
        if os.path.exists(os.path.join(directory, name)):
            return
        time.sleep(0.01)
    sys.exit("the owner's worker did not say " + name + " within 60 s")


def children(pid):
    """The processes whose parent is `pid`, by /proc/<pid>/stat."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open("/proc/%s/stat" % entry).read()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry))
    return out


def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children(p)
    return out


def threads(root):
    """(state, allowed CPUs) of each thread of `root` and its descendants, read from /proc."""
    out = []
    for pid in tree(root):
        out += threads_of(pid)
    return out


def threads_of(pid):
    out = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            stat = open("/proc/%d/task/%s/stat" % (pid, tid)).read()
            status = open("/proc/%d/task/%s/status" % (pid, tid)).read()
        except OSError:
            continue
        state = stat[stat.rindex(")") + 2]
        allowed = set()
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                for part in line.split(":")[1].strip().split(","):
                    lo, _, hi = part.partition("-")
                    allowed.update(range(int(lo), int(hi or lo) + 1))
        out.append((state, allowed))
    return out


def runnable_on(pid, cpu):
    return any(state == "R" and cpu in allowed for state, allowed in threads(pid))


def until(holds, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if holds():
            return True
        time.sleep(0.001)
    return holds()


def metric(name):
    import socket
    s = socket.socket(socket.AF_UNIX)
    s.connect(metrics)
    s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    text = s.makefile().read()
    s.close()
    return [line for line in text.splitlines() if line.startswith(name)]


try:
    start_agent("agent.log")
    # Nothing lends yet: a borrower is refused.
    r = cli("contract", "submit", borrower_plan, "--", "/bin/true", check=False)
    print("borrower before any owner: exit %d: %s" % (r.returncode, r.stderr.strip()))
    cli("contract", "submit", owner_plan, "--", "/usr/bin/python3", owner_worker, directory)
    wait_file("computing")
    r = cli("contract", "submit", big_plan, "--", "/bin/true", check=False)
    print("borrower of two CPUs: exit %d: %s" % (r.returncode, r.stderr.strip()))
    # A spinner that forks a spinner: the child outlives the worker, as a data loader's would.
    cli("contract", "submit", borrower_plan, "--", "/bin/sh", "-c",
        "/bin/sh -c 'while :; do :; done' & while :; do :; done")
    borrower = worker_pid("lit_borrower")
    if not until(lambda: children(borrower), 5):
        sys.exit("the borrower did not fork")
    forked = children(borrower)[0]

    # Computing, the owner lends CPU 1: the borrower's spinner runs there.
    print("lent while computing:", until(lambda: runnable_on(borrower, 1), 5))
    print(cli("node", "loans").stdout, end="")
    status = cli("contract", "status", "lit_lender").stdout
    print("\n".join(l for l in status.splitlines() if l.split()[:1] in (["phase"], ["lends"], ["reclaims"])))

    # Into decode, which keeps CPU 1: from the entry on, no borrower thread may run there.
    open(os.path.join(directory, "go-decode"), "w").close()
    wait_file("decoding")
    print("taken back on decode:", until(lambda: not runnable_on(borrower, 1), 2))
    time.sleep(0.2)
    print("still back 200 ms later:", not runnable_on(borrower, 1))
    status = cli("contract", "status", "lit_borrower").stdout
    print("\n".join(l for l in status.splitlines() if l.split()[:1] == ["borrows"]))
    print("\n".join(metric("mscale_lending_reclaims_total") + metric("mscale_lending_phase_entries_total")))

    # The agent dies with the borrower running on the owner's CPU; the next one ends it.
    open(os.path.join(directory, "go-end"), "w").close()  # back to compute: CPU 1 lent again
    wait_file("computing-again")
    print("lent again after decode:", until(lambda: runnable_on(borrower, 1), 5))
    r = cli("node", "loans", "--timeline", os.path.join(directory, "timeline.svg"))
    print(r.stdout.splitlines()[-1])
    owner = worker_pid("lit_lender")
    agents[-1].send_signal(signal.SIGKILL)
    agents[-1].wait()
    orphans += [owner, borrower, forked]
    os.unlink(sock)
    os.unlink(metrics)

    def ended(pid):
        return all(state == "Z" for state, _ in threads_of(pid))
    # The worker dies with its agent (PDEATHSIG); what it forked runs on, on the owner's CPU.
    print("the borrower's worker ended with the agent:", until(lambda: ended(borrower), 5))
    print("what it forked runs on after the agent was killed:", until(lambda: runnable_on(forked, 1), 2))
    start_agent("agent2.log")
    print("what it forked is ended by the next agent:", until(lambda: ended(forked), 5))
    for contract in ("lit_borrower", "lit_lender"):
        cli("contract", "release", contract, check=False)
finally:
    open(os.path.join(directory, "go-exit"), "w").close()
    for agent in agents:
        if agent.poll() is None:
            agent.terminate()
            try:
                agent.wait(10)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
    for pid in orphans:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
