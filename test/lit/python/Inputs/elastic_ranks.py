"""An elastic data-parallel job whose world size changes 4 -> 3 -> 2 -> 4, against the same job run at
4 ranks without a change.  Each size is a set of processes (torch.distributed, gloo on loopback)
that restores the job's replicated state (ExactResume(replicated=True): rank 0's snapshot, sent to
every rank), trains its share of each step's global batch (ElasticBatchSampler), reduces the
micro-batches' gradients in the canonical order (DeterministicReduction) and ends one of two ways:
a planned stop (a snapshot of the step it stops after, as a drain or a grow asks) or a crash (the
steps after the newest snapshot run again at the next size).  Every rank logs each step's sample
ids and the step's loss.  With ``zero`` the optimizer is torch's ZeroRedundancyOptimizer: its state is sharded over the ranks,
consolidated at rank 0 for each snapshot and re-sharded over the ranks of the next size.
Usage: elastic_ranks.py WORKDIR [deterministic|allreduce|zero]"""
import hashlib
import os
import socket
import sys
from typing import Dict, List, Tuple

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import mscale
from mscale.elastic import DeterministicReduction, ElasticBatchSampler

SAMPLES, GLOBAL, MICRO, EPOCHS = 120, 24, 2, 6
STEPS = EPOCHS * SAMPLES // GLOBAL  # 30
EVERY = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dataset() -> Tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(SAMPLES, 8, generator=g)
    return x, (x[:, :1] * 0.5 - x[:, 1:2] + 0.1 * torch.randn(SAMPLES, 1, generator=g))


def rank_main(rank: int, world: int, port: int, work: str, mode: str, until: int, how: str, run: int) -> None:
    torch.set_num_threads(1)  # one thread: a kernel's own summation order never depends on the machine's load
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    if mode == "zero":  # the optimizer's state sharded over the ranks, re-sharded at every size
        from torch.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.05, momentum=0.9)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sampler = ElasticBatchSampler(SAMPLES, GLOBAL, rank=rank, world_size=world, micro_batch=MICRO, seed=7)
    state = mscale.ExactResume(model=model, optimizer=optimizer, parts={"data": sampler},
                               directory=os.path.join(work, "snapshots"), every=EVERY, memory_tier=False,
                               background_disk=False, replicated=True)
    step = state.restore(required=False)
    reduction = DeterministicReduction(model.parameters())
    x, y = dataset()
    log = open(os.path.join(work, "rank%d.log" % rank), "a")
    while step <= until:
        indices = next(iter(sampler))
        losses = []
        for micro in sampler.micro_batches(indices):
            loss = torch.nn.functional.mse_loss(model(x[micro]), y[micro])
            loss.backward()
            losses.append(loss.detach())
            if mode != "allreduce":
                reduction.add()
        if mode != "allreduce":
            reduction.reduce()
            step_loss = torch.zeros(1)
            gathered = [torch.zeros(len(losses)) for _ in range(world)]
            dist.all_gather(gathered, torch.stack(losses))
            for value in torch.cat(gathered):  # the step's loss, summed in the canonical order too
                step_loss += value
            step_loss /= len(torch.cat(gathered))
        else:  # what DDP does: each rank's mean, all-reduced in gloo's order, divided by the size
            for p in model.parameters():
                p.grad /= len(losses)
                dist.all_reduce(p.grad)
                p.grad /= world
            step_loss = torch.stack(losses).mean().reshape(1)
            dist.all_reduce(step_loss)
            step_loss /= world
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        log.write("run %d step %d world %d epoch %d samples %s loss %s\n"
                  % (run, step, world, sampler.epoch if sampler.consumed else sampler.epoch - 1,
                     ",".join(map(str, indices)), float(step_loss).hex()))
        log.flush()
        state.step_done(step)
        if step == until and how == "stop":
            state.snapshot(step)  # a planned stop: this step's snapshot, whatever the cadence
        step += 1
    if rank == 0 and step > STEPS:
        params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy().tobytes()
        with open(os.path.join(work, "final"), "w") as f:
            f.write(hashlib.sha256(params).hexdigest()[:16] + "\n")
    state.close()
    # Every rank leaves the group together: one that tears gloo down while a peer still has a
    # collective in flight can abort that peer's process.
    dist.barrier()
    dist.destroy_process_group()


def run(work: str, mode: str, segments: List[Tuple[int, int, str]]) -> None:
    os.makedirs(work, exist_ok=True)
    for run_index, (world, until, how) in enumerate(segments):
        mp.spawn(rank_main, args=(world, free_port(), work, mode, until, how, run_index), nprocs=world, join=True)


def history(work: str) -> Tuple[Dict[int, Tuple[int, str, str]], int, int]:
    """Each step's effective record (its last run: a step run again after a crash counts once), how
    many steps ran more than once, and how many of those ran differently (another loss)."""
    runs: Dict[int, Dict[int, List[Tuple[int, int, str, str]]]] = {}  # step -> run -> (rank, epoch, samples, loss)
    for name in os.listdir(work):
        if name.startswith("rank") and name.endswith(".log"):
            rank = int(name[4:-4])
            with open(os.path.join(work, name)) as f:
                for line in f:
                    w = line.split()
                    runs.setdefault(int(w[3]), {}).setdefault(int(w[1]), []).append((rank, int(w[7]), w[9], w[11]))
    effective: Dict[int, Tuple[int, str, str]] = {}
    replayed = differ = 0
    for step, by_run in runs.items():
        last = sorted(by_run[max(by_run)])
        effective[step] = (last[0][1], ",".join(r[2] for r in last if r[2]), last[0][3])
        if len(by_run) > 1:
            replayed += 1
            differ += any(r[3] != last[0][3] for n, rs in by_run.items() for r in rs)
    return effective, replayed, differ


def main() -> None:
    work, mode = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "deterministic"
    run(os.path.join(work, "fixed"), mode, [(4, STEPS, "end")])
    segments = [(4, 12, "stop"), (3, 23, "crash"), (2, 26, "stop"), (4, STEPS, "end")]
    run(os.path.join(work, "elastic"), mode, segments)
    print("sizes: " + " -> ".join("%d ranks to step %d (%s)" % s for s in segments))
    fixed, _, _ = history(os.path.join(work, "fixed"))
    elastic, replayed, differ = history(os.path.join(work, "elastic"))
    print("steps: %d of %d; %d run again after the crash, %d of them different" % (len(elastic), STEPS, replayed, differ))
    per_epoch: Dict[int, List[int]] = {}
    for epoch, samples, _ in elastic.values():
        per_epoch.setdefault(epoch, []).extend(int(i) for i in samples.split(","))
    once = all(sorted(ids) == list(range(SAMPLES)) for ids in per_epoch.values())
    print("samples: %d epochs, each sample once in every epoch: %s" % (len(per_epoch), "yes" if once else "NO"))
    same_batches = all(sorted(elastic[s][1].split(",")) == sorted(fixed[s][1].split(",")) for s in fixed)
    print("each step's global batch the fixed run's: %s" % ("yes" if same_batches else "NO"))
    if mode != "allreduce":
        equal = sum(elastic[s][2] == fixed[s][2] for s in fixed)
        print("losses bit-identical to the fixed 4-rank run: %d of %d" % (equal, STEPS))
        finals = [open(os.path.join(work, d, "final")).read().strip() for d in ("fixed", "elastic")]
        print("final parameters bit-identical: %s" % ("yes" if finals[0] == finals[1] else "NO (%s, %s)" % tuple(finals)))
    else:
        worst = max(abs(float.fromhex(elastic[s][2]) - float.fromhex(fixed[s][2])) / abs(float.fromhex(fixed[s][2]))
                    for s in fixed)
        equal = sum(elastic[s][2] == fixed[s][2] for s in fixed)
        print("losses within 1e-5 of the fixed run (relative): %s; largest difference %.1e; bit-identical: %d of %d"
              % ("yes" if worst < 1e-5 else "NO", worst, equal, STEPS))


if __name__ == "__main__":
    main()
