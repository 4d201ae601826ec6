"""The example PyTorch job (examples/python/train.py: DistributedDataParallel over gloo with exact
resume) as a cluster job's worker: the ranks find each other through the variables the placement
gives them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). The cluster compiled the job's contract
(two recorded nodes) itself, so the example's own contract check, which compiles its tiny_vlm
contract for the machine it runs on, is not what this job's plan is: it is bypassed (the undecorated
function). Each start appends the rendezvous it was given to ``<--log>.rendezvous`` (one line:
``rank R of W at ADDR:PORT``), and prints it: the worker's output the node keeps.  A planned stop (a
drain) asked on a rank's control page ends it as train.py ends: after that step, whose snapshot is on
disk, with ``# stopped after step S: planned move`` in its log and status 0 (every rank is asked the
same S).  Usage: ddp_job.py ARGS... (train.py's)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "examples", "python"))
import train  # noqa: E402

if __name__ == "__main__":
    log = sys.argv[sys.argv.index("--log") + 1]
    told = "rank %s of %s at %s:%s" % tuple(os.environ.get(k, "?") for k in
                                            ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))
    with open(log + ".rendezvous", "a") as f:
        f.write(told + "\n")
    print(told, flush=True)
    sys.exit(train.main.__wrapped__(sys.argv[1:]))
