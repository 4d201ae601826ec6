"""A data-parallel worker of an elastic job (nodes = MIN..MAX), as the cluster starts it: RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT and MSCALE_GLOBAL_BATCH from its placement.  Each step trains
this rank's share of the global batch (ElasticBatchSampler), reduces the micro-batches' gradients
in one order (DeterministicReduction) and reports to ExactResume(replicated=True): rank 0 keeps the
snapshots, every rank of any later size resumes from them; a planned stop (a grow, a drain) ends
the worker after the step asked.  Every rank appends one line a step to --log:
``t T placement P step S world W rank R epoch E samples I,J,... loss HEX`` (P: rank 0's rendezvous
port and supervisor's attempt, new at every start of the job), one write each, so that the ranks' lines
interleave whole.  Rank 0 of the run that finishes writes the parameters' digest to <log>.final.
Usage: elastic_worker.py --log FILE --snapshot-dir DIR --steps N [--every K] [--delay S]"""
import argparse
import datetime
import hashlib
import os
import time

import torch
import torch.distributed as dist

import mscale
from mscale.elastic import DeterministicReduction, ElasticBatchSampler

SAMPLES, MICRO = 120, 2


def dataset():
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(SAMPLES, 8, generator=g)
    return x, x[:, :1] * 0.5 - x[:, 1:2] + 0.1 * torch.randn(SAMPLES, 1, generator=g)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--snapshot-dir", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--delay", type=float, default=0.0)
    args = ap.parse_args()
    torch.set_num_threads(1)  # a kernel's summation order must not depend on the machine's load
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    if os.environ.get("MSCALE_DETERMINISTIC_REDUCTION") == "1":  # the contract's; ExactResume holds us to it
        with open(args.log + ".deterministic", "a") as told:
            told.write("world %d rank %d\n" % (world, rank))
    # Rank 0's rendezvous port and attempt, the same on every rank of this run: each node numbers its
    # own attempts (a node kept across a new placement has had more of them than one just placed).
    tag = ["%s.%s" % (os.environ.get("MASTER_PORT", "?"), os.environ.get("MSCALE_ATTEMPT", "0"))]
    dist.broadcast_object_list(tag, src=0)
    placement = tag[0]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sampler = ElasticBatchSampler(SAMPLES, micro_batch=MICRO, seed=7)
    state = mscale.ExactResume(model=model, optimizer=optimizer, parts={"data": sampler},
                               directory=args.snapshot_dir, every=args.every, replicated=True)
    step = state.restore(required=False)
    reduction = DeterministicReduction(model.parameters())
    x, y = dataset()
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    while step <= args.steps:
        indices = next(iter(sampler))
        epoch = sampler.epoch if sampler.consumed else sampler.epoch - 1
        losses = []
        for micro in sampler.micro_batches(indices):
            loss = torch.nn.functional.mse_loss(model(x[micro]), y[micro])
            loss.backward()
            reduction.add()
            losses.append(loss.detach())
        reduction.reduce()
        gathered = [torch.zeros(len(losses)) for _ in range(world)]
        dist.all_gather(gathered, torch.stack(losses))
        step_loss = torch.zeros(1)
        for value in torch.cat(gathered):
            step_loss += value
        step_loss /= len(torch.cat(gathered))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        os.write(log, ("t %.3f placement %s step %d world %d rank %d epoch %d samples %s loss %s\n"
                       % (time.time(), placement, step, world, rank, epoch, ",".join(map(str, indices)),
                          float(step_loss).hex())).encode())
        state.step_done(step)
        if state.should_stop:
            break
        step += 1
        if args.delay:
            time.sleep(args.delay)
    if rank == 0 and step > args.steps:
        params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy().tobytes()
        with open(args.log + ".final", "w") as f:
            f.write(hashlib.sha256(params).hexdigest()[:16] + "\n")
    state.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
