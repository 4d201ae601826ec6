# lending-gpu.test's driver: a recorded GPU node served with the sim backends; the owner lends its
# trainer's GPU slices while it decodes, the borrower is handed 2 units and told (its control page),
# and when the owner computes they are taken back, the borrower told to let go and acknowledging.
# What the borrower was told is what it wrote, not the agent's word. Every process it starts is
# ended in `finally`.
#
#   lending_gpu.py DIR TOPOLOGY OWNER.msp BORROWER.msp OWNER_WORKER.py BORROWER_WORKER.py
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_driver import Agent, until, wait_file  # noqa: E402

directory, topology, owner_plan, borrower_plan, owner_worker, borrower_worker = sys.argv[1:7]
agent = Agent(directory)


def read(name):
    with open(os.path.join(directory, name)) as f:
        return f.read()


def loans():
    return agent.cli("node", "loans").stdout


try:
    agent.start("agent.log", "--topology", topology)
    agent.cli("contract", "submit", owner_plan, "--", "/usr/bin/python3", owner_worker, directory)
    wait_file(directory, "decoding")
    agent.cli("contract", "submit", borrower_plan, "--", "/usr/bin/python3", borrower_worker, directory)
    wait_file(directory, "working")
    print("told of its lent units:", read(wait_file(directory, "told-1", 20)))
    until(lambda: "units of" in loans(), 10)
    print("\n".join(l for l in loans().splitlines() if "units of" in l).replace("\t", " | ").rsplit("|", 1)[0])
    status = agent.cli("contract", "status", "lit_gpu_borrower").stdout
    print("\n".join(l.rsplit("(for", 1)[0] for l in status.splitlines() if l.split()[:1] == ["borrows"]))

    # Into compute, which keeps the trainer's GPU: taken back, the borrower told to let go.
    open(os.path.join(directory, "go-compute"), "w").close()
    wait_file(directory, "computing")
    print("told to let go:", repr(read(wait_file(directory, "told-2", 20))))
    print("no GPU units lent once it let go:", until(lambda: "units of" not in loans(), 10))
    status = agent.cli("contract", "status", "lit_gpu_lender").stdout
    print("\n".join(l for l in status.splitlines() if l.split()[:1] == ["reclaims"]))
    print("\n".join(agent.metric("mscale_lending_lent_gpu_unit_seconds_total")).split(" ")[0])
    open(os.path.join(directory, "borrower-exit"), "w").close()
    open(os.path.join(directory, "go-exit"), "w").close()
finally:
    open(os.path.join(directory, "borrower-exit"), "w").close()
    open(os.path.join(directory, "go-exit"), "w").close()
    agent.stop()
