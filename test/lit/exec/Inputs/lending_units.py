# The driver of lending-gpu.test and lending-rdma.test: a recorded node served with the sim backends;
# the owner lends its trainer's GPU units or queue pairs (KIND: gpu | rdma) while it decodes, the
# borrower is handed some and told (its control page), and when the owner computes they are taken
# back, the borrower told to let go and acknowledging. What the borrower was told is what it wrote,
# not the agent's word. Every process it starts is ended in `finally`.
#
#   lending_units.py KIND DIR TOPOLOGY OWNER.msp BORROWER.msp OWNER_WORKER.py BORROWER_WORKER.py
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_driver import Agent, until, wait_file  # noqa: E402

kind, directory, topology, owner_plan, borrower_plan, owner_worker, borrower_worker = sys.argv[1:8]
# What a loan of the kind looks like in `node loans`, the metric that counts it, the word for them.
held, metric, units = {
    "gpu": ("units of", "mscale_lending_lent_gpu_unit_seconds_total", "GPU units"),
    "rdma": ("queue pairs of", "mscale_lending_lent_queue_pair_seconds_total", "queue pairs"),
}[kind]
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
    agent.cli("contract", "submit", borrower_plan, "--", "/usr/bin/python3", borrower_worker, directory, kind)
    wait_file(directory, "working")
    print("told of its lent %s: %s" % (units, read(wait_file(directory, "told-1", 20))))
    until(lambda: held in loans(), 10)
    print("\n".join(l for l in loans().splitlines() if held in l).replace("\t", " | ").rsplit("|", 1)[0])
    status = agent.cli("contract", "status", "lit_%s_borrower" % kind).stdout
    print("\n".join(l.rsplit("(for", 1)[0] for l in status.splitlines() if l.split()[:1] == ["borrows"]))

    # Into compute, which keeps the trainer's GPU or RDMA: taken back, the borrower told to let go.
    open(os.path.join(directory, "go-compute"), "w").close()
    wait_file(directory, "computing")
    print("told to let go:", repr(read(wait_file(directory, "told-2", 20))))
    print("no %s lent once it let go: %s" % (units, until(lambda: held not in loans(), 10)))
    status = agent.cli("contract", "status", "lit_%s_lender" % kind).stdout
    print("\n".join(l for l in status.splitlines() if l.split()[:1] == ["reclaims"]))
    print("\n".join(agent.metric(metric)).split(" ")[0])
    open(os.path.join(directory, "borrower-exit"), "w").close()
    open(os.path.join(directory, "go-exit"), "w").close()
finally:
    open(os.path.join(directory, "borrower-exit"), "w").close()
    open(os.path.join(directory, "go-exit"), "w").close()
    agent.stop()
