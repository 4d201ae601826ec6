# lending-yield.test's driver: a borrower that cooperates is asked to yield when the owner enters
# the phase that keeps its CPU, yields, and is lent again after it; when the owner's worker is
# killed, what it lent is back before recovery starts and the borrower is not asked. Where the
# borrower's threads may run is read from /proc. Every process it starts is ended in `finally`.
#
#   lending_yield.py DIR OWNER.msp BORROWER.msp SECOND.msp OWNER_WORKER.py BORROWER_WORKER.py
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_driver import Agent, runnable_on, until, wait_file  # noqa: E402

directory, owner_plan, borrower_plan, second_plan, owner_worker, borrower_worker = sys.argv[1:7]
agent = Agent(directory)


def read(name):
    with open(os.path.join(directory, name)) as f:
        return f.read()


try:
    agent.start("agent.log")
    agent.cli("contract", "submit", owner_plan, "--", "/usr/bin/python3", owner_worker, directory)
    wait_file(directory, "computing")
    agent.cli("contract", "submit", borrower_plan, "--", "/usr/bin/python3", borrower_worker, directory)
    wait_file(directory, "working")
    borrower = agent.worker_pid("lit_yield_borrower")
    print("lent while computing:", until(lambda: runnable_on(borrower, 1), 10))

    # Into decode, which keeps CPU 1: the borrower is asked first, with what is left of the bound.
    open(os.path.join(directory, "go-decode"), "w").close()
    wait_file(directory, "decoding")
    given = float(read(wait_file(directory, "asked-1", 5)))
    print("asked to yield with at most half the 200 ms bound left:", 0 <= given <= 100, "(%.1f ms)" % given)
    print("off CPU 1 once it yielded:", until(lambda: not runnable_on(borrower, 1), 2))
    print(agent.cli("node", "loans").stdout.splitlines()[-1])
    print("\n".join(agent.metric("mscale_lending_yield")))

    # Back to compute: lent again, its yield returns.
    open(os.path.join(directory, "go-end"), "w").close()
    wait_file(directory, "computing-again")
    wait_file(directory, "resumed-1", 5)
    print("resumed, on CPU 1 again:", until(lambda: runnable_on(borrower, 1), 10))

    # A second borrower while the first has the only CPU lent: its worker waits frozen in its gate,
    # and the agent goes on answering (it does not wait for that worker's exec).
    start = time.monotonic()
    agent.cli("contract", "submit", second_plan, "--", "/bin/sh", "-c", "while :; do :; done", timeout=20)
    print("a second borrower admitted at once:", time.monotonic() - start < 10)
    status = agent.cli("contract", "status", "lit_yield_second", timeout=20).stdout
    print("\n".join(l for l in status.splitlines() if l.split()[:1] == ["borrows"]))
    agent.cli("contract", "release", "lit_yield_second", timeout=20)
    print("the first borrower still on CPU 1:", until(lambda: runnable_on(borrower, 1), 5))

    # The owner's worker dies while it lends CPU 1: taken back before recovery, nobody asked.
    owner = agent.worker_pid("lit_yield_lender")
    os.kill(owner, signal.SIGKILL)
    print("taken back at the owner's fault:", until(lambda: not runnable_on(borrower, 1), 2))
    time.sleep(0.2)
    print("still back 200 ms later:", not runnable_on(borrower, 1))
    print("asked again:", os.path.exists(os.path.join(directory, "asked-2")))
    for contract in ("lit_yield_borrower", "lit_yield_lender"):
        agent.cli("contract", "release", contract, check=False)
finally:
    for name in ("go-exit", "borrower-exit"):
        open(os.path.join(directory, name), "w").close()
    agent.stop()
