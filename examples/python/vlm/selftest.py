"""Proof that training ``TinyVLM`` is deterministic bit for bit, also across a save and resume.

    cd examples/python
    python3 -m vlm.selftest check [--samples 64] [--steps 20] [--save-at 10] [--seed 0]

``check`` generates a data set into a temporary directory and trains in fresh processes:

1. ``steps`` steps from ``seed``;
2. the same again, saving a checkpoint after step ``save_at`` on the way;
3. a new process that loads that checkpoint and trains steps ``save_at + 1 .. steps``;
4. the same resume with two data loader worker processes;
5. a control: the same resume without restoring the generator states.

and requires that runs 2, 3 and 4 give every step the same loss (compared as ``float.hex``), the same
learning rate and the same sample ids as run 1, and end with the same parameters (SHA-256 of the
state_dict), and that run 5 differs (dropout draws from the generator, so a job that forgets its
state is caught).  Exit status 0 when all hold, 1 otherwise.

``run`` is one training process (what ``check`` starts); it prints one JSON object a line: per step
``{"step", "loss", "lr", "ids"}`` (loss and lr as ``float.hex``), then ``{"params", "seconds",
"parameters"}``.  The loop is a minimal reference for a training script: Adam, warm-up + cosine LR
(``mscale.scheduler.MScaleLRScheduler``), dropout, flip augmentation, and
``mscale.data.StatefulDataLoader`` for a data order and per-sample random numbers that resume exactly.
The checkpoint holds what a step depends on: model, optimizer, scheduler, loader position and torch's
CPU generator state (plus Python's and NumPy's, which this job does not draw from in the main process
but a script might).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import torch

from .data import CaptionDataset, collate
from .model import TinyVLM

_HERE = os.path.dirname(os.path.abspath(__file__))
_EXAMPLES = os.path.dirname(_HERE)  # examples/python: holds make_dataset.py and this package

try:
    from mscale.data import StatefulDataLoader
    from mscale.scheduler import MScaleLRScheduler
except ImportError:  # run from a source tree without PYTHONPATH: the package is at <root>/python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(_EXAMPLES)), "python"))
    from mscale.data import StatefulDataLoader
    from mscale.scheduler import MScaleLRScheduler

MAX_TOKENS = 24
BASE_LR = 3e-3


def make_deterministic() -> None:
    """What a training script calls first for losses that repeat bit for bit."""
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


def parameter_digest(model: torch.nn.Module) -> str:
    """SHA-256 over the names, shapes and bytes of the model's state_dict, in its order."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


def save_checkpoint(path: str, state: Dict[str, Any]) -> None:
    """``torch.save`` to a temporary name, then rename: a killed save leaves the old file whole."""
    temporary = f"{path}.tmp-{os.getpid()}"
    torch.save(state, temporary)
    os.replace(temporary, path)


def train(data: str, steps: int, seed: int, *, batch_size: int = 8, image_size: int = 32,
          workers: int = 0, save_at: Optional[int] = None, checkpoint: Optional[str] = None,
          resume: Optional[str] = None, restore_rng: bool = True,
          emit: Callable[[Dict[str, Any]], None] = lambda record: None) -> Dict[str, Any]:
    """Train ``steps`` steps (counting the resumed ones); ``emit`` each step's record.

    ``restore_rng=False`` resumes without the saved generator states: the control that shows the
    check notices a job that forgets them (its dropout masks differ).  Returns the final record: the
    parameter digest, the seconds the steps took and the parameter count.
    """
    make_deterministic()
    torch.manual_seed(seed)  # the initial weights, then every dropout mask
    dataset = CaptionDataset(data, image_size, MAX_TOKENS, augment=True)
    model = TinyVLM.for_dataset(dataset)
    optimizer = torch.optim.Adam(model.parameters(), lr=BASE_LR)
    scheduler = MScaleLRScheduler(optimizer, base_lr=BASE_LR, warmup_steps=max(1, steps // 4),
                                  total_steps=steps, decay="cosine", min_lr=BASE_LR / 10)
    loader = StatefulDataLoader(dataset, batch_size=batch_size, shuffle=True, seed=seed,
                                num_workers=workers, drop_last=True, collate_fn=collate)
    step = 0
    if resume is not None:
        # Everything above drew from the generators as a fresh run does; now the saved states
        # replace what those draws produced.
        state = torch.load(resume)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        loader.load_state_dict(state["loader"])
        if restore_rng:
            torch.set_rng_state(state["torch_rng"])
            random.setstate(state["python_rng"])
            np.random.set_state(state["numpy_rng"])
        step = state["step"]

    model.train()  # dropout on
    started = time.perf_counter()
    while step < steps:
        for batch in loader:
            step += 1
            lr = optimizer.param_groups[0]["lr"]
            loss = model.loss(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            emit({"step": step, "loss": loss.item().hex(), "lr": float(lr).hex(),
                  "ids": batch["ids"]})
            if save_at is not None and step == save_at and checkpoint is not None:
                save_checkpoint(checkpoint, {
                    "step": step, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                    "loader": loader.state_dict(), "torch_rng": torch.get_rng_state(),
                    "python_rng": random.getstate(), "numpy_rng": np.random.get_state()})
            if step >= steps:
                break
    return {"params": parameter_digest(model), "seconds": time.perf_counter() - started,
            "parameters": model.num_parameters()}


def _run(args: argparse.Namespace) -> int:
    def emit(record: Dict[str, Any]) -> None:
        print(json.dumps(record), flush=True)

    final = train(args.data, args.steps, args.seed, batch_size=args.batch_size,
                  image_size=args.image_size, workers=args.workers, save_at=args.save_at,
                  checkpoint=args.checkpoint, resume=args.resume,
                  restore_rng=not args.forget_rng, emit=emit)
    emit(final)
    return 0


def run_child(arguments: List[str]) -> Dict[str, Any]:
    """Run ``vlm.selftest run`` in a fresh interpreter; its step records and final record."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [_EXAMPLES] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    output = subprocess.run([sys.executable, "-m", "vlm.selftest", "run", *arguments], env=env,
                            check=True, stdout=subprocess.PIPE, text=True).stdout
    records = [json.loads(line) for line in output.splitlines()]
    return {"steps": {r["step"]: r for r in records if "step" in r},
            "final": next(r for r in records if "params" in r)}


def compare(name: str, run: Dict[str, Any], reference: Dict[str, Any], first: int,
             last: int) -> List[str]:
    """Differences of ``run`` from ``reference`` over steps ``first .. last`` and the end."""
    problems = []
    for step in range(first, last + 1):
        got, want = run["steps"].get(step), reference["steps"][step]
        if got is None:
            problems.append(f"{name}: step {step} missing")
            continue
        for key in ("loss", "lr", "ids"):
            if got[key] != want[key]:
                problems.append(f"{name}: step {step} {key} {got[key]} != {want[key]}")
    if sorted(run["steps"]) != list(range(first, last + 1)):
        problems.append(f"{name}: ran steps {sorted(run['steps'])}, expected {first}..{last}")
    if run["final"]["params"] != reference["final"]["params"]:
        problems.append(f"{name}: final parameters differ")
    return problems


def check(samples: int = 64, steps: int = 20, save_at: int = 10, seed: int = 0,
          batch_size: int = 8, out: Callable[[str], None] = print) -> bool:
    """The whole proof (see the module docstring); says what it found through ``out``."""
    if not 0 < save_at < steps:
        raise ValueError(f"need 0 < save_at < steps, got {save_at} and {steps}")
    with tempfile.TemporaryDirectory(prefix="vlm-selftest-") as scratch:
        data = os.path.join(scratch, "data")
        subprocess.run([sys.executable, os.path.join(_EXAMPLES, "make_dataset.py"), data,
                        "--samples", str(samples), "--seed", str(seed)], check=True,
                       stdout=subprocess.DEVNULL)
        common = ["--data", data, "--steps", str(steps), "--seed", str(seed),
                  "--batch-size", str(batch_size)]
        ckpt = os.path.join(scratch, "step.pt")
        first = run_child(common)
        second = run_child(common + ["--save-at", str(save_at), "--checkpoint", ckpt])
        resumed = run_child(common + ["--resume", ckpt])
        resumed_workers = run_child(common + ["--resume", ckpt, "--workers", "2"])
        forgetful = run_child(common + ["--resume", ckpt, "--forget-rng"])
    final = first["final"]
    out(f"TinyVLM: {final['parameters']} parameters; {steps} steps of batch {batch_size} in "
        f"{final['seconds']:.2f} s on 1 thread")
    out(f"losses: step 1 {float.fromhex(first['steps'][1]['loss']):.6f}, step {steps} "
        f"{float.fromhex(first['steps'][steps]['loss']):.6f}")
    problems = []
    for name, run, start in (("second run", second, 1), ("resumed run", resumed, save_at + 1),
                             ("resumed run, 2 workers", resumed_workers, save_at + 1)):
        found = compare(name, run, first, start, steps)
        out(f"{name}: steps {start}..{steps} "
            + ("equal bit for bit (loss, lr, sample ids, final parameters)" if not found
               else f"DIFFER ({len(found)} differences)"))
        problems += found
    for problem in problems:
        out("  " + problem)
    # The control: without the generator state the dropout masks, hence the losses, must differ;
    # if they did not, the comparisons above would prove nothing about the RNG.
    control = compare("control", forgetful, first, save_at + 1, steps)
    if control:
        out(f"control (resumed without the RNG state): differs, as it must ({control[0]})")
    else:
        out("control (resumed without the RNG state): EQUAL -- dropout draws nothing?")
    return not problems and bool(control)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m vlm.selftest",
                                     description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="one training process, JSON lines on stdout")
    run.add_argument("--data", required=True, help="a set written by make_dataset.py")
    run.add_argument("--steps", type=int, required=True, help="last step to run")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--batch-size", type=int, default=8)
    run.add_argument("--image-size", type=int, default=32)
    run.add_argument("--workers", type=int, default=0, help="data loader worker processes")
    run.add_argument("--save-at", type=int, help="save a checkpoint after this step")
    run.add_argument("--checkpoint", help="where --save-at saves")
    run.add_argument("--resume", help="a checkpoint to continue from")
    run.add_argument("--forget-rng", action="store_true",
                     help="resume without the saved generator states (a control: must differ)")
    proof = commands.add_parser("check", help="the determinism and resume proof")
    proof.add_argument("--samples", type=int, default=64)
    proof.add_argument("--steps", type=int, default=20)
    proof.add_argument("--save-at", type=int, default=10)
    proof.add_argument("--seed", type=int, default=0)
    proof.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args(argv)
    if args.command == "run":
        if args.save_at is not None and args.checkpoint is None:
            parser.error("--save-at needs --checkpoint")
        return _run(args)
    return 0 if check(args.samples, args.steps, args.save_at, args.seed, args.batch_size) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
