#!/usr/bin/python3
"""Train the tiny vision-language model (``vlm/``) on a data set made by ``make_dataset.py``, with
exact resume: run it under ``mscale-exec`` and kill it at any step; the per-step losses, learning
rates, sample ids and the final parameters equal those of a run that never failed.

    mscalec --topology live -o train.msp examples/python/train.msc
    mscale-exec run train.msp -- /usr/bin/python3 examples/python/train.py --data DATA --steps 200 --log train.log

The log has one line per step (``step S epoch E ids ... loss HEX lr HEX scale X``) plus ``#`` lines
saying how each attempt started, and ``final step S params SHA256`` at the end: the format of
``mscale-train-sim``, so the same recovery checker reads both.

With ``WORLD_SIZE`` > 1 (``mscale-exec run --nproc-per-node 2``, or torchrun) the ranks train one
model with ``DistributedDataParallel`` over gloo: every rank reads the same global batch order and
takes its share of each batch; rank 0 writes ``--log``, rank R > 0 ``<log>.rank<R>``.

Asked by ``mscale-exec`` to stop after step S (a drain: the job moves to other nodes), it ends the
loop after S, whose snapshot ``ExactResume`` has committed to disk, logs ``# stopped after step S:
planned move`` instead of the ``final`` line and exits 0; the next placement resumes at S+1.

``--checkpoint FILE`` replaces the snapshot store with a plain ``torch.save`` of the same state every
``--every`` steps and ``torch.load`` on start: the baseline the benchmark compares recovery against.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import sys
import time
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np
import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:
    import mscale
except ImportError:  # run from a source tree without the package installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(_HERE)), "python"))
    import mscale
import mscale.io
from mscale.data import StatefulDataLoader
from mscale.scheduler import MScaleLRScheduler
from vlm.data import CaptionDataset, collate
from vlm.model import TinyVLM

MAX_TOKENS = 24
BASE_LR = 3e-3


def _role_exists(role: str) -> bool:
    return role in os.environ.get("MSCALE_ROLES", "").split(",")


def _phase(name: str) -> Any:
    """``mscale.phase(name)`` where the plan names phases (under mscale-exec), else nothing: the same
    script runs alone without the worker runtime's library."""
    return mscale.phase(name) if os.environ.get("MSCALE_PHASES") else contextlib.nullcontext()


def parameter_digest(model: torch.nn.Module) -> str:
    """SHA-256 over the names, shapes and bytes of the parameters and buffers, in order."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(("%s:%s;" % (name, tuple(tensor.shape))).encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


class TorchSaveCheckpoint:
    """The baseline: the same state as ``ExactResume``, through ``torch.save``/``torch.load`` of one
    file (written to a temporary name and renamed).  No memory tier, no checksums, no agreement."""

    def __init__(self, path: str, every: int, parts: Dict[str, Any]) -> None:
        self.path, self.every, self.parts = path, every, parts

    def restore(self) -> int:
        if not os.path.exists(self.path):
            return 1
        state = torch.load(self.path)
        for name, obj in self.parts.items():
            obj.load_state_dict(state[name])
        mscale.resume.set_rng_state(state["rng"])
        return state["step"] + 1

    def step_done(self, step: int) -> bool:
        if step % self.every:
            return False
        state = {name: obj.state_dict() for name, obj in self.parts.items()}
        state.update(step=step, rng=mscale.resume.rng_state())
        torch.save(state, self.path + ".tmp")
        os.replace(self.path + ".tmp", self.path)
        return True

    def close(self) -> None:
        pass


# Under mscale-exec the decorator checks that the plan being run is this contract's, compiled for
# this node; alone, it checks that the node could honour it and says that nothing enforces it.
# MSCALE_EXAMPLE_CONTRACT names another file with a contract 'tiny_vlm' (a variant: a warm standby).
@mscale.mscale_contract(file=os.environ.get("MSCALE_EXAMPLE_CONTRACT", os.path.join(_HERE, "train.msc")),
                        name="tiny_vlm")
def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a data set made by make_dataset.py")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=8, help="the global batch (split over the ranks)")
    ap.add_argument("--workers", type=int, default=1,
                    help="data-loader worker processes (on the image_loader role's cores under mscale-exec)")
    ap.add_argument("--log", required=True, help="the per-step log (appended to)")
    ap.add_argument("--snapshot-dir", help="default: the plan's (MSCALE_SNAPSHOT_DIR)")
    ap.add_argument("--every", type=int, help="snapshot cadence in steps; default: the plan's")
    ap.add_argument("--no-snapshots", action="store_true", help="train without exact-resume state")
    ap.add_argument("--checkpoint", help="the torch.save/torch.load baseline instead of the snapshot store")
    ap.add_argument("--timing", help="append 'first-step <unix seconds> started <unix seconds>' of this attempt "
                    "and 'loop-seconds S steps N snapshot-seconds T snapshots K' of the training loop here "
                    "(the benchmark reads them)")
    ap.add_argument("--model-out", help="save the trained model's state_dict() here at the end (torch.save)")
    a = ap.parse_args(argv)
    started = time.time()

    # Bit-for-bit losses across runs and restarts: deterministic kernels, one thread.
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
    if _role_exists("trainer"):
        mscale.io.pin_to_role("trainer")

    torch.manual_seed(a.seed)  # the initial weights, then every dropout mask
    random.seed(a.seed)
    np.random.seed(a.seed)
    loader_role = "image_loader" if _role_exists("image_loader") else None
    # The worker runtime's io_uring reader at the role's queue depth; a data-loader worker process
    # forked from here opens its own ring on first use (mscale.io.UringReader).
    reader: Optional[Callable[[str], bytes]] = mscale.io.UringReader(role=loader_role).read_file if os.environ.get(
        "MSCALE_ROLES") else None
    dataset = CaptionDataset(a.data, 32, MAX_TOKENS, read_bytes=reader, augment=True)
    model = TinyVLM.for_dataset(dataset)
    optimizer = torch.optim.Adam(model.parameters(), lr=BASE_LR)
    scheduler = MScaleLRScheduler(optimizer, base_lr=BASE_LR, warmup_steps=max(1, a.steps // 10),
                                  total_steps=a.steps, decay="cosine", min_lr=BASE_LR / 10)
    extra: Dict[str, Any] = {}
    if a.workers and loader_role:
        extra["worker_init_fn"] = mscale.io.role_worker_init(loader_role)
    loader = StatefulDataLoader(dataset, batch_size=a.batch_size, shuffle=True, seed=a.seed,
                                num_workers=a.workers, drop_last=True, collate_fn=collate, **extra)
    trained = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model

    # Everything above is start-up that touches nothing the running job owns: a warm standby (the
    # contract's standby_worker) does it ahead of a fault and waits here until it is handed the job.
    mscale.io.take_over()
    log_path = a.log + (".rank%d" % rank if rank > 0 else "")  # rank 0 writes the log the tools watch
    log = open(log_path, "a", buffering=1)
    parts = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "loader": loader}
    state: Any = None
    if a.checkpoint:
        state = TorchSaveCheckpoint(a.checkpoint, a.every or 10, parts)
        step = state.restore()
    elif not a.no_snapshots:
        state = mscale.ExactResume(directory=a.snapshot_dir, every=a.every, **parts)
        step = state.restore()
    else:
        step = 1
    # Said once the attempt has resumed, with the line saying from where: a restarted rank of a
    # multi-node job waits in restore for the others (they agree on the step), and one ended there
    # (its job placed again elsewhere) did not resume at all, so its fault must not be read as the
    # reason of the next attempt's resume.
    if os.environ.get("MSCALE_RESTART_REASON"):
        log.write("# restart after fault %s\n" % os.environ["MSCALE_RESTART_REASON"])
    _log_start(log, state, step, loader)

    model.train()  # dropout on
    timing = open(a.timing, "a", buffering=1) if a.timing else None
    loop_started, first = time.time(), step
    snapshot_seconds, snapshots = 0.0, 0  # the training thread's time in snapshots (the benchmark's)
    # The phases (train.msc): the loop computes, except while it fetches a batch (decode: the loader's
    # CPU is kept) and while it writes a recovery point (snapshot). Leaving a phase returns to the one
    # around it, so the worker is never between phases, where the contract keeps everything.
    stopped = False  # a planned stop (ExactResume.should_stop): the job goes on elsewhere
    with _phase("compute"):
        while step <= a.steps and not stopped:
            epoch = loader.epoch
            batches = iter(loader)
            while step <= a.steps:
                with _phase("decode"):
                    batch = next(batches, None)
                if batch is None:  # the epoch is done
                    break
                share = _share(batch, rank, world)
                lr = optimizer.param_groups[0]["lr"]
                loss = model.loss(share) if world == 1 else _ddp_loss(trained, share)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                log.write("step %d epoch %d ids %s loss %s lr %s scale 1\n" % (
                    step, epoch, ",".join(str(int(i)) for i in batch["ids"]), loss.item().hex(), float(lr).hex()))
                if timing and step == first:
                    timing.write("first-step %.6f started %.6f\n" % (time.time(), started))
                if state:
                    before = time.perf_counter()
                    with _phase("snapshot") if step % state.every == 0 else contextlib.nullcontext():
                        if state.step_done(step):
                            snapshot_seconds += time.perf_counter() - before
                            snapshots += 1
                    if getattr(state, "should_stop", False):
                        log.write("# stopped after step %d: planned move\n" % step)
                        stopped = True
                        break
                step += 1
    if state:
        state.close()
    if timing:
        timing.write("loop-seconds %.6f steps %d snapshot-seconds %.6f snapshots %d\n" % (
            time.time() - loop_started, step - first + (1 if stopped else 0), snapshot_seconds, snapshots))
    if stopped:  # not done: no model to hand on, no final line that would read as a completed run
        log.close()
        if world > 1:
            torch.distributed.destroy_process_group()
        return 0
    if a.model_out:  # what the inference borrower of lending_demo.sh loads
        torch.save(model.state_dict(), a.model_out + ".tmp")
        os.replace(a.model_out + ".tmp", a.model_out)
    log.write("final step %d params %s\n" % (a.steps, parameter_digest(model)))
    log.close()
    if world > 1:
        torch.distributed.destroy_process_group()
    return 0


def _log_start(log: Any, state: Any, step: int, loader: StatefulDataLoader) -> None:
    """The attempt's first line, as mscale-train-sim writes it (the recovery checker reads it)."""
    restored = getattr(state, "restored_from", None)
    if restored is not None:
        for reason in restored.skipped:
            log.write("# skipped snapshot: %s\n" % reason)
        log.write("# resume step %d from %s snapshot %d epoch %d position %d\n" % (
            step, restored.tier, restored.step, loader.epoch, loader.sampler.yielded))
    elif step > 1:  # the torch.save baseline
        log.write("# resume step %d from file snapshot %d\n" % (step, step - 1))
    else:
        log.write("# start step 1 (%s)\n" % ("no snapshot" if state else "snapshots off"))


def _share(batch: Dict[str, Any], rank: int, world: int) -> Dict[str, Any]:
    """This rank's part of the global batch: every world-th sample from its rank on."""
    if world == 1:
        return batch
    return {key: value[rank::world] for key, value in batch.items()}


def _ddp_loss(trained: torch.nn.Module, share: Dict[str, Any]) -> torch.Tensor:
    # DDP reduces the gradients of what its forward() computed: call it, then the model's loss on it.
    logits = trained(share["pixels"], share["tokens"])
    return trained.module.loss_from_logits(logits, share["tokens"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
