# lending-agent.test's driver: a node agent lends what an owner's phase does not keep to a borrower
# and takes it back when the owner enters the phase that keeps it; an agent killed with a borrower
# running is followed by one that ends it. What is promised is checked from the borrower's side
# (its threads in /proc), not from what the agent reports. Every process it starts is ended in
# `finally`, whatever fails.
#
#   lending_agent.py DIR OWNER.msp BORROWER.msp BIG.msp OWNER_WORKER.py
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_driver import Agent, children, runnable_on, threads_of, until, wait_file  # noqa: E402

directory, owner_plan, borrower_plan, big_plan, owner_worker = sys.argv[1:6]
agent = Agent(directory)
orphans = []  # workers an agent killed with SIGKILL left behind
cli, worker_pid, metric = agent.cli, agent.worker_pid, agent.metric


def errors(text):
    """The error lines of a refusal: a warning of the node's (WRN_EXEC_001: its temperatures or free
    hugepages changed since the plan was compiled) may come first, and is not what is checked."""
    return "\n".join(line for line in text.splitlines() if "error[" in line)


try:
    agent.start("agent.log")
    # Nothing lends yet: a borrower is refused.
    r = cli("contract", "submit", borrower_plan, "--", "/bin/true", check=False)
    print("borrower before any owner: exit %d: %s" % (r.returncode, errors(r.stderr)))
    cli("contract", "submit", owner_plan, "--", "/usr/bin/python3", owner_worker, directory)
    wait_file(directory, "computing")
    r = cli("contract", "submit", big_plan, "--", "/bin/true", check=False)
    print("borrower of two CPUs: exit %d: %s" % (r.returncode, errors(r.stderr)))
    # A spinner that forks a spinner: the child outlives the worker, as a data loader's would.
    cli("contract", "submit", borrower_plan, "--", "/bin/sh", "-c",
        "/bin/sh -c 'while :; do :; done' & while :; do :; done")
    borrower = worker_pid("lit_borrower")
    if not until(lambda: children(borrower), 20):
        sys.exit("the borrower did not fork")
    forked = children(borrower)[0]

    # Computing, the owner lends CPU 1: the borrower's spinner runs there.
    print("lent while computing:", until(lambda: runnable_on(borrower, 1), 20))
    print(cli("node", "loans").stdout, end="")
    status = cli("contract", "status", "lit_lender").stdout
    print("\n".join(l for l in status.splitlines() if l.split()[:1] in (["phase"], ["lends"], ["reclaims"])))

    # Into decode, which keeps CPU 1: from the entry on, no borrower thread may run there.
    open(os.path.join(directory, "go-decode"), "w").close()
    wait_file(directory, "decoding")
    print("taken back on decode:", until(lambda: not runnable_on(borrower, 1), 2))
    time.sleep(0.2)
    print("still back 200 ms later:", not runnable_on(borrower, 1))
    status = cli("contract", "status", "lit_borrower").stdout
    print("\n".join(l for l in status.splitlines() if l.split()[:1] == ["borrows"]))
    print("\n".join(metric("mscale_lending_reclaims_total") + metric("mscale_lending_phase_entries_total")))

    # The agent dies with the borrower running on the owner's CPU; the next one ends it.
    open(os.path.join(directory, "go-end"), "w").close()  # back to compute: CPU 1 lent again
    wait_file(directory, "computing-again")
    print("lent again after decode:", until(lambda: runnable_on(borrower, 1), 5))
    r = cli("node", "loans", "--timeline", os.path.join(directory, "timeline.svg"))
    print(r.stdout.splitlines()[-1])
    owner = worker_pid("lit_lender")
    agent.processes[-1].send_signal(signal.SIGKILL)
    agent.processes[-1].wait()
    orphans += [owner, borrower, forked]
    os.unlink(agent.sock)
    os.unlink(agent.metrics)

    def ended(pid):
        return all(state == "Z" for state, _ in threads_of(pid))
    # The worker dies with its agent (PDEATHSIG); what it forked runs on, on the owner's CPU.
    print("the borrower's worker ended with the agent:", until(lambda: ended(borrower), 5))
    print("what it forked runs on after the agent was killed:", until(lambda: runnable_on(forked, 1), 2))
    agent.start("agent2.log")
    print("what it forked is ended by the next agent:", until(lambda: ended(forked), 5))
    for contract in ("lit_borrower", "lit_lender"):
        cli("contract", "release", contract, check=False)
finally:
    open(os.path.join(directory, "go-exit"), "w").close()
    agent.stop()
    for pid in orphans:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
