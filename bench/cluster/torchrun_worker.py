"""The elastic job of test/lit/cluster/Inputs/elastic_worker.py (same data, model, optimizer and
global batch) written the way a torchrun elastic job is: a checkpoint of model, optimizer and step
that rank 0 saves every --every steps (torch.save, renamed into place), DistributedSampler's
sharding (rank r of W takes every W-th sample of the epoch's permutation, a fixed number per step)
and, after a restart, the epoch's position as the number of batches each rank has taken. That
position means another set of samples at another world size, which is what the benchmark counts.
Gradients are averaged with an all-reduce, as DDP does. It logs one line a step per rank in
elastic_worker.py's format, so elastic_history.py reads both.
Usage (under torchrun): torchrun_worker.py --log FILE --checkpoint DIR --steps N [--every K] [--delay S]"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "lit", "cluster", "Inputs"))
from elastic_worker import MICRO, SAMPLES, dataset  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--global-batch", type=int, default=24)
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    # A rendezvous round's port, which its rank 0 agent picks afresh: the same on every rank of the
    # round (the restart count is not: an agent that joined later counts from 0).
    placement = "%s.0" % os.environ.get("MASTER_PORT", "?")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    path = os.path.join(args.checkpoint, "checkpoint.pt")
    step = 1
    if os.path.exists(path):
        saved = torch.load(path)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"] + 1
    x, y = dataset()
    per_epoch = SAMPLES // args.global_batch
    per_rank = args.global_batch // world
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    while step <= args.steps:
        epoch, taken = divmod(step - 1, per_epoch)
        order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(7 + epoch)).tolist()
        shard = order[rank::world]
        indices = shard[taken * per_rank:(taken + 1) * per_rank]
        losses = []
        for i in range(0, len(indices), MICRO):
            micro = indices[i:i + MICRO]
            loss = torch.nn.functional.mse_loss(model(x[micro]), y[micro])
            loss.backward()
            losses.append(loss.detach())
        for p in model.parameters():
            p.grad /= max(len(losses), 1)
            dist.all_reduce(p.grad)
            p.grad /= world
        step_loss = torch.stack(losses).mean().reshape(1)
        dist.all_reduce(step_loss)
        step_loss /= world
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        os.write(log, ("t %.3f placement %s step %d world %d rank %d epoch %d samples %s loss %s\n"
                       % (time.time(), placement, step, world, rank, epoch, ",".join(map(str, indices)),
                          float(step_loss).hex())).encode())
        if rank == 0 and step % args.every == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path + ".tmp")
            os.replace(path + ".tmp", path)
        step += 1
        if args.delay:
            time.sleep(args.delay)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
