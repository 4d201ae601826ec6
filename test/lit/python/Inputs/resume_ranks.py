"""Two ranks (torch.distributed, gloo on loopback) agree on the snapshot to resume from: the newest
step that every rank committed.  Usage: resume_ranks.py CASE WORKDIR
  behind:  rank 0 committed steps 5 and 10, rank 1 only 5 (it died before 10): both resume at 6
  missing: rank 0 committed steps, rank 1 none: ERR_PY_026 (no consistent resume)"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import mscale
from mscale.errors import MScaleError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank: int, case: str, work: str, port: int) -> None:
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2)
    torch.manual_seed(rank)
    model = torch.nn.Linear(3, 1)
    initial = float(model.weight[0, 0])
    state = mscale.ExactResume(model=model, directory=work, every=5, memory_tier=False, background_disk=False)
    steps = {"behind": (10, 5), "missing": (10, 0)}[case][rank]
    for step in range(1, steps + 1):
        with torch.no_grad():
            model.weight.add_(1.0)
        state.step_done(step)
    dist.barrier()
    # The restart: fresh objects in every rank, as after a fault.
    model = torch.nn.Linear(3, 1)
    state = mscale.ExactResume(model=model, directory=work, every=5, memory_tier=False)
    try:
        next_step = state.restore(required=True)
        # The restored weight is the initial one plus one per step up to the restored step.
        print("rank %d: next step %d, weight moved by %.1f" % (rank, next_step, float(model.weight[0, 0]) - initial),
              flush=True)
    except MScaleError as e:
        print("rank %d: %s" % (rank, e), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    case, work = sys.argv[1], sys.argv[2]
    mp.spawn(rank_main, args=(case, work, free_port()), nprocs=2, join=True)
