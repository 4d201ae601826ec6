"""Exact-resume state: everything a training job needs to continue at step N+1 as if it never stopped.

One object, one call a step::

    state = mscale.ExactResume(model=model, optimizer=opt, scheduler=sched, loader=loader)
    step = state.restore()                  # 1 on a fresh start, N+1 after a fault
    for batch in loader:                    # the loader continues where the snapshot left it
        ...                                 # forward, backward, optimizer.step(), scheduler.step()
        state.step_done(step)               # heartbeat; a snapshot at the plan's recovery points
        if state.should_stop:               # a planned move (drain): this step is on disk, end here
            break
        step += 1
    state.close()

A snapshot holds the registered parts' ``state_dict()`` (model, optimizer, LR scheduler, data loader
position, a ``torch.cuda.amp.GradScaler`` and its loss-scale history, any other object with
``state_dict``/``load_state_dict``) and the random number generators (Python, NumPy if present,
torch CPU and every CUDA device).  It goes into the worker runtime's snapshot store
(``libmscale_snapshot.so``): the in-memory tier synchronously -- a restart on the same node reads it
back in milliseconds -- and the disk tier in a background thread, for node loss.  Every byte is
checksummed; a torn or corrupt snapshot is skipped with its coded error and the next newest is
used; a restarted worker (``MSCALE_RESUME=1``) that finds nothing valid stops with ERR_PY_022 rather
than starting again at step 1.

A planned stop (a drain: an operator moves the job to other nodes): the executor asks the worker, on
its control page, to stop after a step S; every rank of a job is asked the same S.  ``step_done(S)``
then snapshots S whatever the cadence, waits until the disk tier has it (the memory tier stays on
the node left behind), tells the executor, and sets ``should_stop``: the loop ends, the program
exits 0 (without writing what a finished run writes) and the job resumes at S+1 elsewhere, replaying
no step.  A step done after that is an error (ERR_PY_024): two copies of the job would run.

Under ``mscale-exec`` the cadence, directory and number kept come from the plan
(``MSCALE_SNAPSHOT_EVERY``, ``MSCALE_SNAPSHOT_DIR``, ``MSCALE_SNAPSHOT_KEEP``) and the memory tier
is the executor's memfd (``MSCALE_SNAPSHOT_MEMFD``), so it outlives a crashed worker; arguments given
here win over the plan's.  With ``torch.distributed`` each rank keeps its own store
(``<directory>/rank-<r>``) and the ranks resume from the newest step *every* rank committed.

An elastic job (``nodes = 2..4``: it may resume at another world size) passes ``replicated=True``:
its state is the same on every rank (DDP's model and optimizer, ``ElasticBatchSampler``'s ledger),
so rank 0 alone keeps the store, in ``directory`` itself (storage every node reaches), and at a
restore reads the newest valid snapshot and sends it to every rank, whatever the world size now.  A
rank that did not exist at the old size, or a per-rank directory left from an older size, cannot drag
the resume back.  A sharded optimizer (``ZeroRedundancyOptimizer``) is gathered at rank 0 for each
snapshot and loaded by every rank of the next size as its own shard: it is re-sharded.  Every rank
resumes rank 0's random number generators: a job whose ranks need streams of their own seeds them
from the step and the rank.
"""

from __future__ import annotations

import io
import os
import random
import re
import sys
import traceback
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import torch

from mscale import _snapshot
from mscale._environment import env_int
from mscale.errors import MScaleError, ResumeError, SnapshotError, UsageError


def _elastic_reductions() -> int:
    # mscale.elastic imports torch's samplers: loaded when a state is made, not with the package.
    from mscale.elastic import reductions
    return reductions()

try:
    import numpy as _np
except ImportError:  # NumPy is optional; its generator is captured when it is there
    _np = None

# Exit statuses the supervisor classifies (executor/supervise/Fault.h): 3 = nothing to resume from
# (ERR_EXEC_022), 73 = a snapshot write found the disk full (ERR_EXEC_025), 75 = another rank went
# away and broke this one's collective (peer-lost: not this rank's crash).
EXIT_NOTHING_TO_RESUME = 3
EXIT_DISK_FULL = 73
EXIT_PEER_LOST = 75

# What gloo's TCP transport raises when the other end of a pair is gone (torch 1.13:
# "[./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:3742: Connection reset by peer").
_PEER_GONE = re.compile(r"gloo/transport/tcp/.*(Connection reset by peer|Connection closed by peer|Broken pipe)")

_RNG_PART = "rng"
_RESERVED = {_RNG_PART, "loss_scale"}


def _log(message: str) -> None:
    print("mscale: " + message, file=sys.stderr, flush=True)


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError("ERR_PY_024", "'%s' must be an integer >= 1, got %r" % (name, value))
    return value


class _Heartbeat:
    """The worker's side of the control page, through the worker runtime: a beat per step, and from a
    helper thread while a snapshot is saved or restored (which may take longer than the supervisor's
    hang timeout)."""

    def __init__(self) -> None:
        self._beat: Optional[Callable[[int], None]] = None
        if os.environ.get("MSCALE_CONTROL_FD"):
            from mscale import io as _io  # the worker runtime's C ABI; only needed under mscale-exec
            self._beat = _io.heartbeat

    def __call__(self, step: Optional[int]) -> None:
        if self._beat:
            self._beat(step)

    def during(self, step: Optional[int]) -> "_BeatWhile":
        return _BeatWhile(self, step)

    def finishing(self) -> None:
        if self._beat:
            from mscale import io as _io
            _io.finishing()

    def stop_requested(self) -> int:
        """The step the executor asks the worker to stop after; 0 (nothing asked) unsupervised."""
        if not self._beat:
            return 0
        from mscale import io as _io
        return _io.stop_requested()

    def stopped_at(self, step: int) -> None:
        if self._beat:
            from mscale import io as _io
            _io.stopped_at(step)


class _BeatWhile:
    RESTORING = None  # the worker runtime's "restoring, step not known yet"

    def __init__(self, beat: _Heartbeat, step: Optional[int]) -> None:
        self._beat, self._step = beat, step
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> None:
        if self._beat._beat:
            self._beat(self._step)
            self._thread = threading.Thread(target=self._run, name="mscale-beat", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            self._beat(self._step)

    def __exit__(self, *exc: Any) -> None:
        self._done.set()
        if self._thread:
            self._thread.join()


def rng_state() -> Dict[str, Any]:
    """The states of every generator a training step may draw from."""
    state: Dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if _np is not None:
        state["numpy"] = _np.random.get_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any], step: int = 0) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if _np is not None and "numpy" in state:
        _np.random.set_state(state["numpy"])
    if "cuda" in state:
        if not torch.cuda.is_available():
            raise ResumeError("ERR_PY_023", step, "the snapshot has CUDA generator states but CUDA is not available")
        torch.cuda.set_rng_state_all(state["cuda"])


def _to_bytes(obj: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _from_bytes(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), map_location="cpu")


class _LossScaleHistory:
    """The (step, scale) changes of a GradScaler: what dynamic loss scaling did, kept with the state."""

    def __init__(self, scaler: Any) -> None:
        self.scaler = scaler
        self.changes: List[Tuple[int, float]] = []

    def observe(self, step: int) -> None:
        if not self.scaler.is_enabled():
            return
        scale = float(self.scaler.get_scale())
        if not self.changes or self.changes[-1][1] != scale:
            self.changes.append((step, scale))

    def state_dict(self) -> Dict[str, Any]:
        return {"changes": list(self.changes)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.changes = [(int(s), float(v)) for s, v in state["changes"]]


class ExactResume:
    """The exact-resume state of one training process.  See the module's docstring.

    Args:
        model, optimizer, scheduler, loader, scaler: the parts to capture (any may be omitted).
        parts: more named objects with ``state_dict()`` / ``load_state_dict()``.
        directory: the disk tier (default ``MSCALE_SNAPSHOT_DIR``); required.
        every: snapshot every this many steps (default ``MSCALE_SNAPSHOT_EVERY``, else 100).
        keep: disk snapshots kept (default ``MSCALE_SNAPSHOT_KEEP``, else 3).
        memory_tier: use the in-memory tier (default True).
        background_disk: write the disk tier from a background thread (default True).
        rank, world_size: this process's rank (default: ``torch.distributed`` when initialised).
        replicated: the state is the same on every rank: rank 0 keeps it, every rank restores it
            (an elastic job; see the module's docstring).
    """

    def __init__(self, *, model: Any = None, optimizer: Any = None, scheduler: Any = None, loader: Any = None,
                 scaler: Any = None, parts: Optional[Mapping[str, Any]] = None, directory: Optional[str] = None,
                 every: Optional[int] = None, keep: Optional[int] = None, memory_tier: bool = True,
                 background_disk: bool = True, rank: Optional[int] = None, world_size: Optional[int] = None,
                 replicated: bool = False) -> None:
        self._parts: Dict[str, Any] = {}
        for name, obj in (("model", model), ("optimizer", optimizer), ("scheduler", scheduler),
                          ("loader", loader), ("scaler", scaler)):
            if obj is not None:
                self._add(name, obj)
        for name, obj in (parts or {}).items():
            if not isinstance(name, str) or not name or name in self._parts or name in _RESERVED:
                raise UsageError("ERR_PY_024", "part name %r is empty, reserved or given twice" % (name,))
            self._add(name, obj)
        self._loss_scale = _LossScaleHistory(scaler) if scaler is not None else None
        if self._loss_scale:
            self._parts["loss_scale"] = self._loss_scale

        directory = directory or os.environ.get("MSCALE_SNAPSHOT_DIR")
        if not directory:
            raise UsageError("ERR_PY_024", "no snapshot directory: pass directory= or run under a plan "
                             "whose fault_tolerance sets one (MSCALE_SNAPSHOT_DIR)")
        self.every = _positive_int("every", every if every is not None else (env_int("MSCALE_SNAPSHOT_EVERY") or 100))
        keep = _positive_int("keep", keep if keep is not None else (env_int("MSCALE_SNAPSHOT_KEEP") or 3))
        self.rank, self.world_size = self._distributed(rank, world_size)
        self.replicated = bool(replicated)
        per_rank = self.world_size > 1 and not self.replicated
        self.directory = os.path.join(directory, "rank-%d" % self.rank) if per_rank else directory
        # A replicated state's one store is rank 0's: another rank never opens it (a store cleans up
        # the temporary files of writers it believes dead, and a writer on another node looks dead).
        self._store: Optional[_snapshot.Store] = None
        if not self.replicated or self.rank == 0:
            _check_writable(self.directory)
            self._store = _snapshot.Store(self.directory, memory_tier=memory_tier, keep=keep)
        self._background = background_disk
        self._disk_writer: Optional[threading.Thread] = None
        self._disk_error: Optional[BaseException] = None
        self._heartbeat = _Heartbeat()
        # The contract's deterministic_reduction: each step must have been reduced through
        # mscale.DeterministicReduction, or the run would depend on the world size after all.
        self._deterministic = os.environ.get("MSCALE_DETERMINISTIC_REDUCTION") == "1"
        self._reductions_seen = _elastic_reductions()
        self.last_snapshot_step: Optional[int] = None
        self.stopped_at: Optional[int] = None  # the step of a planned stop, once committed (should_stop)
        self.restored_from: Optional[_snapshot.Restored] = None
        self._nothing_reason = "no snapshot"
        _install_exit_status_hook()
        global _current
        _current = self

    # --- registration ----------------------------------------------------------------------------
    def _add(self, name: str, obj: Any) -> None:
        for method in ("state_dict", "load_state_dict"):
            if not callable(getattr(obj, method, None)):
                raise UsageError("ERR_PY_024", "'%s' has no %s(): got %s" % (name, method, type(obj).__name__))
        if type(obj).__name__ == "ReduceLROnPlateau":
            from mscale.scheduler import warn_if_plateau
            warn_if_plateau(obj)
        self._parts[name] = obj

    @staticmethod
    def _distributed(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
        if rank is None and world_size is None:
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                return dist.get_rank(), dist.get_world_size()
            return 0, 1
        if rank is None or world_size is None or not (0 <= rank < world_size):
            raise UsageError("ERR_PY_024", "rank %r and world_size %r must be given together, 0 <= rank < world_size"
                             % (rank, world_size))
        return rank, world_size

    # --- saving ----------------------------------------------------------------------------------
    def step_done(self, step: int) -> bool:
        """Call once per step, after the optimizer and scheduler steps of ``step``.  Beats the
        control page and, at the recovery points (``step % every == 0``), snapshots.  True when a
        snapshot was taken.  When the executor asks the worker to stop after ``step`` (a planned
        move), it also snapshots off the cadence, waits for the disk tier and sets ``should_stop``."""
        if self.stopped_at is not None:
            raise UsageError("ERR_PY_024", "step %d is done after the planned stop after step %d: end the training "
                             "loop when should_stop is true" % (step, self.stopped_at))
        if self._deterministic:
            reduced = _elastic_reductions()
            if reduced == self._reductions_seen:
                raise UsageError("ERR_PY_053", step)
            self._reductions_seen = reduced
        if self._loss_scale:
            self._loss_scale.observe(step)
        self._heartbeat(step)
        stop = self._heartbeat.stop_requested() == step
        if step % self.every and not stop:
            return False
        self.snapshot(step)
        if stop:
            # The job moves to other nodes, where only the disk tier is: the executor is told once
            # the disk holds this step, not before.
            self._finish_disk_write()
            self._heartbeat.stopped_at(step)
            self.stopped_at = step
            _log("stopped after step %d: planned move (its snapshot is on disk)" % step)
        return True

    @property
    def should_stop(self) -> bool:
        """True once ``step_done`` has committed a planned stop (``stopped_at`` is its step): end the
        training loop, ``close()`` and exit 0; the job resumes at the next step on other nodes.  A
        property, like Lightning's ``Trainer.should_stop``: ``if state.should_stop: break``."""
        return self.stopped_at is not None

    def snapshot(self, step: int) -> None:
        """Snapshot the state after ``step``: the memory tier now, the disk tier in the background
        (or now, with ``background_disk=False``).  Raises ``SnapshotError`` (ERR_PY_025) when the
        store refuses; the previous snapshot then stays the newest."""
        _positive_int("step", step)
        self._finish_disk_write()
        if self.replicated and self.world_size > 1:
            # A sharded optimizer (ZeroRedundancyOptimizer) gathers its whole state at rank 0, which
            # keeps it; at a restore each rank, at whatever size, loads its own shard of it. Every
            # rank snapshots the same steps, so this collective meets on all of them.
            for obj in self._parts.values():
                if callable(getattr(obj, "consolidate_state_dict", None)):
                    obj.consolidate_state_dict(to=0)
        if self._store is None:  # a replicated state: rank 0 keeps it
            self.last_snapshot_step = step
            return
        blobs = [(name, _kind(name), _to_bytes(obj.state_dict())) for name, obj in self._parts.items()]
        blobs.append((_RNG_PART, _snapshot.KIND_RNG, _to_bytes(rng_state())))
        meta = self._meta(step)
        with self._heartbeat.during(step):
            if not self._background:
                self._store.save(step, blobs, _snapshot.BOTH, **meta)
            else:
                self._store.save(step, blobs, _snapshot.MEMORY, **meta)
                self._disk_writer = threading.Thread(target=self._write_disk, args=(step, blobs, meta),
                                                     name="mscale-snapshot-disk", daemon=True)
                self._disk_writer.start()
        self.last_snapshot_step = step

    def _write_disk(self, step: int, blobs: List[Tuple[str, int, bytes]], meta: Dict[str, Any]) -> None:
        try:
            self._store.save(step, blobs, _snapshot.DISK, **meta)
        except BaseException as e:  # reported to the training thread at the next snapshot or close
            self._disk_error = e

    def _finish_disk_write(self) -> None:
        if self._disk_writer:
            # The wait is the disk's (fsync under someone else's I/O can take seconds): the worker
            # is not hung meanwhile, so the control page keeps beating.
            with self._heartbeat.during(self.last_snapshot_step):
                self._disk_writer.join()
            self._disk_writer = None
        if self._disk_error:
            error, self._disk_error = self._disk_error, None
            raise error

    def _meta(self, step: int) -> Dict[str, Any]:
        """What the store keeps beside the blobs, for tools that read snapshots without Python."""
        meta: Dict[str, Any] = {}
        loader = self._parts.get("loader")
        sampler = getattr(loader, "sampler", None)
        if sampler is not None and hasattr(sampler, "yielded"):
            meta["loader"] = _snapshot.LoaderMeta("", 0, int(sampler.seed), int(sampler.epoch), 0, int(sampler.yielded))
        scheduler = self._parts.get("scheduler")
        if scheduler is not None and hasattr(scheduler, "get_last_lr"):
            params = [float(getattr(scheduler, n)) for n in ("warmup_steps", "total_steps") if hasattr(scheduler, n)]
            meta["lr"] = _snapshot.LrMeta(type(scheduler).__name__, float(scheduler.base_lrs[0]),
                                          float(scheduler.get_last_lr()[0]), step, params)
        if self._loss_scale and self._loss_scale.scaler.is_enabled():
            tracker = int(self._loss_scale.scaler.state_dict().get("_growth_tracker", 0))
            meta["loss_scale"] = (float(self._loss_scale.scaler.get_scale()), tracker, self._loss_scale.changes)
        return meta

    # --- restoring -------------------------------------------------------------------------------
    def restore(self, required: Optional[bool] = None) -> int:
        """Restore the newest valid snapshot (of the newest step every rank committed) and return
        the step to run next: 1 when there is nothing to restore on a first start.

        ``required`` (default: ``MSCALE_RESUME=1``, i.e. this worker is a restart) makes "nothing to
        restore" a ``ResumeError`` (ERR_PY_022) instead of a fresh start."""
        if required is None:
            required = os.environ.get("MSCALE_RESUME") == "1"
        names = list(self._parts) + [_RNG_PART]
        with self._heartbeat.during(_BeatWhile.RESTORING):
            restored = self._restore_replicated(names) if self.replicated else self._restore_agreed(names)
        if restored is None:
            if required:
                raise ResumeError("ERR_PY_022", "this worker is a restart (MSCALE_RESUME=1)" if os.environ.get(
                    "MSCALE_RESUME") == "1" else "a restore was required", self._nothing_reason)
            self._heartbeat(0)
            return 1
        for reason in restored.skipped:
            _log("skipped a snapshot: " + reason)
        self._load(restored)
        self.restored_from = restored
        self.last_snapshot_step = restored.step
        self._heartbeat(restored.step)
        _log("resumed at step %d from %s (%s)" % (restored.step + 1, restored.tier, restored.source))
        return restored.step + 1

    def _restore_agreed(self, names: List[str]) -> Optional[_snapshot.Restored]:
        """This rank's newest valid snapshot of the newest step that every rank has valid.

        Collective: every rank runs the same rounds.  Each round all ranks share the min and max
        of their candidate steps; equal means agreed; otherwise each rank goes back to at most the
        min (a rank whose snapshot of that step does not verify goes lower, and the next round
        follows it)."""
        mine: Optional[_snapshot.Restored] = None
        bound = 2**64 - 1
        while True:
            if mine is None or mine.step > bound:
                try:
                    mine = self._store.restore(names, bound)
                except _snapshot.NothingToRestore as e:
                    mine, self._nothing_reason = None, str(e)
            if self.world_size == 1:
                return mine
            step = mine.step if mine else -1
            low, high = _all_reduce_min_max(step)
            if low == high:
                return mine if low >= 0 else None
            if low < 0:  # some rank has nothing valid, another has: no step is common to all
                if mine is None:
                    raise ResumeError("ERR_PY_026", "rank %d has no valid snapshot, another rank has up to step %d"
                                      % (self.rank, high))
                raise ResumeError("ERR_PY_026", "rank %d has snapshots up to step %d, another rank has none"
                                  % (self.rank, step))
            bound = low

    def _restore_replicated(self, names: List[str]) -> Optional[_snapshot.Restored]:
        """Rank 0's newest valid snapshot, sent to every rank (collective when distributed)."""
        mine: Optional[_snapshot.Restored] = None
        if self._store is not None:
            try:
                mine = self._store.restore(names)
            except _snapshot.NothingToRestore as e:
                self._nothing_reason = str(e)
        if self.world_size == 1:
            return mine
        message: List[Any] = [(mine, self._nothing_reason)]
        torch.distributed.broadcast_object_list(message, src=0)
        restored, self._nothing_reason = message[0]
        return restored

    def _load(self, restored: _snapshot.Restored) -> None:
        for name in list(self._parts) + [_RNG_PART]:
            if name not in restored.blobs:
                raise ResumeError("ERR_PY_023", restored.step, "it has no part '%s'" % name)
        for name, obj in self._parts.items():
            try:
                obj.load_state_dict(_from_bytes(restored.blobs[name]))
            except MScaleError:
                raise
            except Exception as e:
                raise ResumeError("ERR_PY_023", restored.step, "part '%s' does not load: %s" % (name, _first_line(e)))
        set_rng_state(_from_bytes(restored.blobs[_RNG_PART]), restored.step)

    def close(self) -> None:
        """Wait for a background disk write and close the store (raises its error, if any).  The
        training is over: the supervisor is told the worker is finishing, so the seconds its exit may
        take (data loader processes, a process group) are not taken for a hang."""
        try:
            self._finish_disk_write()
        finally:
            if self._store is not None:
                self._store.close()
            self._heartbeat.finishing()

    def __enter__(self) -> "ExactResume":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _first_line(e: BaseException) -> str:
    """An exception's text on one line (torch's load errors span several), at most 300 characters."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _kind(name: str) -> int:
    return {"model": _snapshot.KIND_MODEL, "optimizer": _snapshot.KIND_OPTIMIZER}.get(name, _snapshot.KIND_OTHER)


def _all_reduce_min_max(value: int) -> Tuple[int, int]:
    tensor = torch.tensor([value, -value], dtype=torch.int64)
    torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MIN)
    return int(tensor[0]), -int(tensor[1])


def _check_writable(directory: str) -> None:
    """ERR_PY_021 before the first step, not a failed snapshot hours later."""
    try:
        os.makedirs(directory, exist_ok=True)
        probe = os.path.join(directory, ".mscale-write-probe.%d" % os.getpid())
        with open(probe, "wb") as f:
            f.write(b"x")
        os.unlink(probe)
    except OSError as e:
        raise SnapshotError("ERR_PY_021", directory, e.strerror or str(e))


_current: Optional[ExactResume] = None


def mscale_snapshot(step: Optional[int] = None) -> int:
    """Snapshot the current ``ExactResume`` (the one created last) now, after ``step`` completed,
    to both tiers, and wait for the disk tier.  Returns ``step``."""
    state = _require_current()
    if step is None:
        raise UsageError("ERR_PY_024", "mscale_snapshot() needs the step that has just completed")
    state.snapshot(step)
    state._finish_disk_write()
    return step


def mscale_restore(path: Optional[str] = None) -> int:
    """Restore the current ``ExactResume`` from its store, or from ``path`` (a snapshot directory,
    or one ``snap-<step>.msnap`` file of a disk tier); returns the step to run next.  A file that
    does not verify is an error, not a fall-back to an older snapshot."""
    state = _require_current()
    if path is None:
        return state.restore(required=True)
    asked = "'%s' was asked for" % path
    names = list(state._parts) + [_RNG_PART]
    directory, at_most = path, 2**64 - 1
    if os.path.isfile(path):
        base = os.path.basename(path)
        if not (base.startswith("snap-") and base.endswith(".msnap") and base[5:-6].isdigit()):
            raise UsageError("ERR_PY_024", "'%s' is not a snapshot file (snap-<step>.msnap)" % path)
        directory, at_most = os.path.dirname(path) or ".", int(base[5:-6])
    store = _snapshot.Store(directory, memory_tier=False)
    try:
        restored = store.restore(names, at_most)
    except _snapshot.NothingToRestore as e:
        raise ResumeError("ERR_PY_022", asked, str(e))
    finally:
        store.close()
    if at_most != 2**64 - 1 and restored.step != at_most:
        raise ResumeError("ERR_PY_022", asked, "; ".join(restored.skipped) or "it did not verify")
    state._load(restored)
    state.restored_from = restored
    _log("restored step %d from %s" % (restored.step, restored.source))
    return restored.step + 1


def _require_current() -> ExactResume:
    if _current is None:
        raise UsageError("ERR_PY_024", "no ExactResume state: create mscale.ExactResume(...) first")
    return _current


_hook_installed = False


def _install_exit_status_hook() -> None:
    """An uncaught error tells the supervisor through the control page what the worker died of:
    its first line (the supervisor logs it and ``contract status`` shows it) and whether a restart
    can help.  ERR_PY_022 says there is nothing to resume from (it stops with ERR_EXEC_022) and ends
    the process with status 3 for a shell to see; another error a restart meets again (a
    ``ResumeError`` or ``UsageError``, ``retry_cannot_fix``) stops it with ERR_EXEC_030; any other
    keeps Python's status 1 and the restart policy decides.  The previous hook still prints the
    error.  A program that catches an error and goes on says nothing to the supervisor."""
    global _hook_installed
    if _hook_installed:
        return
    previous = sys.excepthook
    # The worker's own death only: a data-loader process forked from it shares its control page,
    # and its errors (a reset connection when the worker is killed) are not the worker's.
    worker_pid = os.getpid()

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        if isinstance(value, MScaleError):
            print(value.render(), file=sys.stderr, flush=True)  # the coded error, without a traceback
        else:
            previous(kind, value, tb)
        status = exit_status_of(value)
        try:
            if os.getpid() == worker_pid:
                from mscale import io as worker_io  # the control page is the native library's
                worker_io.failed(_error_line(kind, value), getattr(value, "retry_cannot_fix", False))
                if status == EXIT_NOTHING_TO_RESUME:
                    worker_io.nothing_to_resume()
        except MScaleError:  # no native library: no page to tell, as there is none to beat on
            pass
        if status != 1:
            sys.stderr.flush()
            os._exit(status)

    sys.excepthook = hook
    _hook_installed = True


def _error_line(kind: type, value: BaseException) -> str:
    """The line a person needs of an error that ended the worker: a coded error's first line, or
    what Python prints last of a traceback (``ValueError: ...``)."""
    if isinstance(value, MScaleError):
        return value.render().splitlines()[0]
    lines = traceback.format_exception_only(kind, value)
    return lines[-1].strip() if lines else kind.__name__


def exit_status_of(error: BaseException) -> int:
    """The exit status the supervisor understands for an error that ends a worker."""
    if isinstance(error, ResumeError) and error.code == "ERR_PY_022":
        return EXIT_NOTHING_TO_RESUME
    if isinstance(error, SnapshotError) and "No space left" in error.message:
        return EXIT_DISK_FULL
    if isinstance(error, RuntimeError) and _PEER_GONE.search(str(error)):
        return EXIT_PEER_LOST
    return 1
