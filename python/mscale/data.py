"""A data order that resumes exactly: ``StatefulSampler`` and ``StatefulDataLoader``.

After a restart from a snapshot the job must see the samples it has not seen yet in this epoch, in
the order an uninterrupted run would have seen them -- no sample repeated, none skipped -- and the
epochs after that in their usual orders.  Debian's ``python3-torch`` (1.13) has no
``torchdata.StatefulDataLoader``; this module provides the part of it that a map-style dataset needs,
with ``state_dict()`` / ``load_state_dict()`` in the same spirit, and avoids two known faults of it:

* The position saved is what the *consumer* has received.  Worker processes fetch batches ahead
  (``prefetch_factor``), so a position counted by the sampler runs ahead of the training loop and a
  resume from it would lose the prefetched batches.  ``StatefulDataLoader`` counts the batches its
  iterator has handed out.
* A state saved right after the last batch of an epoch resumes at the start of the *next* epoch, not
  at the end of the finished one (which would run an empty epoch, or replay it).

The order of epoch ``e`` is a pure function of ``(seed, e, len(dataset), shuffle)``: no generator
state is carried, so the state is a handful of integers and every process computes the same order.

Random numbers used while loading a sample (augmentation) are covered by reseeding: by default the
loader seeds the CPU generators of ``torch``, ``random`` and ``numpy`` with ``sample_seed(seed,
epoch, index)`` right before ``dataset[index]``, in whichever process loads it.  A sample therefore
gets the same random numbers whether it is loaded before or after a resume, by the main process or
by any worker.  See ``StatefulDataLoader`` for what this does not cover.
"""

from __future__ import annotations

import array
import hashlib
import random
from collections.abc import Iterator, Sized
from typing import Any, Callable, Dict, List, Optional, Union

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, Sampler, get_worker_info

from mscale.errors import ResumeError, UsageError

try:  # numpy is optional; when present its global generator is reseeded as well.
    import numpy as _np
except ImportError:  # Debian's python3-torch depends on numpy; pip's torch may not
    _np = None

__all__ = ["DataOrderStateError", "DataOrderUsageError", "StatefulDataLoader", "StatefulSampler", "sample_seed"]

_STATE_VERSION = 1
_SEED_LIMIT = 1 << 64


class DataOrderUsageError(UsageError, ValueError):
    """An argument a sampler or loader of this module (or ``mscale.elastic``'s) cannot use
    (ERR_PY_051).  Also a ``ValueError``, as such errors of Python's own are."""

    def __init__(self, why: str) -> None:
        super().__init__("ERR_PY_051", why)


class DataOrderStateError(ResumeError, ValueError):
    """A saved position a sampler or loader cannot resume from (ERR_PY_052): not its state, or
    one of another data order; resuming from it would lose or repeat samples."""

    def __init__(self, why: str) -> None:
        super().__init__("ERR_PY_052", why)


def _mix(tag: bytes, *values: int) -> int:
    """A 63-bit integer from ``values``, stable across processes, platforms and Python versions."""
    digest = hashlib.blake2b(tag, digest_size=8, person=b"mscale.data")
    for value in values:
        digest.update(int(value).to_bytes(16, "little", signed=True))
    return int.from_bytes(digest.digest(), "little") >> 1


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise DataOrderUsageError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < _SEED_LIMIT:
        raise DataOrderUsageError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def _check_epoch(epoch: Any) -> int:
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise DataOrderUsageError(f"epoch must be an int, got {type(epoch).__name__}")
    if epoch < 0:
        raise DataOrderUsageError(f"epoch must be >= 0, got {epoch}")
    return epoch


def sample_seed(seed: int, epoch: int, index: int) -> int:
    """The seed for loading sample ``index`` of the dataset in ``epoch`` of a loader seeded ``seed``.

    It depends on nothing else -- not the position of the sample in the epoch, the batch size, the
    number of workers or whether the job was restarted -- so a generator seeded with it gives the
    sample the same random numbers in every run.  ``StatefulDataLoader(seed_each_sample=True)``
    seeds the global CPU generators with it before each ``dataset[index]``; inside ``__getitem__``,
    ``torch.initial_seed()`` then returns it, so a dataset may also build its own generator:
    ``torch.Generator().manual_seed(torch.initial_seed())``.
    """
    return _mix(b"sample", _check_seed(seed), _check_epoch(epoch), index)


class StatefulSampler(Sampler[int]):
    """Indices of a map-style dataset, an epoch at a time, with a state that resumes mid-epoch.

    Epoch ``e`` yields every index in ``range(length)`` exactly once: in order if ``shuffle`` is
    false, else in the permutation ``torch.randperm(length)`` draws from a generator seeded with a
    hash of ``(seed, e)``.  The sampler advances itself: the state after the last index of epoch
    ``e`` is already "epoch ``e + 1``, nothing yielded", so each ``iter()`` continues where the
    previous one stopped (the rest of an unfinished epoch, or else the next epoch) and a state saved
    at an epoch's end resumes at the start of the next one.

    The state counts the indices this sampler has *handed out*.  Under a plain ``DataLoader`` with
    worker processes that runs ahead of the training loop by the prefetched batches; use
    ``StatefulDataLoader``, which counts the batches the loop has received.

    Args:
        data_source_or_len: the dataset (anything with ``len()``) or its length.  The length is read
            once, here.
        shuffle: permute each epoch (true) or yield ``0 .. length - 1`` in order (false).
        seed: an integer in ``[0, 2**64)``; the orders depend on nothing else.
    """

    def __init__(self, data_source_or_len: Union[Sized, int], *, shuffle: bool = True,
                 seed: int = 0) -> None:
        if isinstance(data_source_or_len, bool):
            raise DataOrderUsageError("data_source_or_len must be a dataset or an int, got bool")
        if isinstance(data_source_or_len, int):
            length = data_source_or_len
        elif isinstance(data_source_or_len, Sized):
            length = len(data_source_or_len)
        else:
            raise DataOrderUsageError("data_source_or_len must be a dataset with len() or an int, got "
                                      f"{type(data_source_or_len).__name__}")
        if length < 0:
            raise DataOrderUsageError(f"the length must be >= 0, got {length}")
        self._length = length
        self._shuffle = bool(shuffle)
        self._seed = _check_seed(seed)
        self._epoch = 0
        self._yielded = 0
        self._generation = 0
        self._order_cache: Optional[tuple[int, torch.Tensor, str]] = None

    # --- the orders -------------------------------------------------------------------------------

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def shuffle(self) -> bool:
        return self._shuffle

    @property
    def epoch(self) -> int:
        """The epoch the next index comes from."""
        return self._epoch

    @property
    def yielded(self) -> int:
        """How many indices of the current epoch have been handed out."""
        return self._yielded

    def __len__(self) -> int:
        """The number of indices in a whole epoch (not what is left of the current one)."""
        return self._length

    def _order(self, epoch: int) -> tuple[torch.Tensor, str]:
        """Epoch ``epoch``'s indices (an int64 tensor, not to be modified) and their digest."""
        cached = self._order_cache
        if cached is not None and cached[0] == epoch:
            return cached[1], cached[2]
        if self._shuffle:
            generator = torch.Generator()
            generator.manual_seed(_mix(b"order", self._seed, epoch))
            order = torch.randperm(self._length, generator=generator, dtype=torch.int64)
        else:
            order = torch.arange(self._length, dtype=torch.int64)
        # The digest pins the permutation itself, so a restart on a torch whose randperm draws a
        # different permutation from the same seed is refused instead of silently reordering.
        data = order.numpy().tobytes() if _np is not None else array.array("q", order.tolist())
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        self._order_cache = (epoch, order, digest)
        return order, digest

    def indices(self, epoch: int) -> List[int]:
        """All indices of epoch ``epoch``, in the order this sampler yields them."""
        return self._order(_check_epoch(epoch))[0].tolist()

    # --- position ---------------------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Go to the start of ``epoch``; if the sampler is in ``epoch`` already, keep its position.

        The sampler advances its epoch by itself, so a loop need not call this.  Keeping the
        position lets a ``DistributedSampler``-style loop (``set_epoch(e)`` before each epoch) resume
        a restored mid-epoch state.  Iterators obtained before a change of epoch stop working.
        """
        epoch = _check_epoch(epoch)
        if epoch != self._epoch:
            self._set_position(epoch, 0)

    def _set_position(self, epoch: int, yielded: int) -> None:
        if self._length and yielded >= self._length:  # the epoch is complete: the next one is due
            epoch, yielded = epoch + 1, 0
        self._epoch, self._yielded = epoch, yielded
        self._generation += 1

    def __iter__(self) -> Iterator[int]:
        """The rest of the current epoch: from index ``yielded`` to its end."""
        self._generation += 1
        return self._iterate(self._generation, self._epoch, self._yielded)

    def _iterate(self, generation: int, epoch: int, start: int) -> Iterator[int]:
        order, _ = self._order(epoch)
        chunk = 1024
        for begin in range(start, self._length, chunk):
            for offset, index in enumerate(order[begin:begin + chunk].tolist()):
                if generation != self._generation:
                    raise RuntimeError("this StatefulSampler iterator was superseded by a later "
                                       "iter(), set_epoch() or load_state_dict()")
                position = begin + offset + 1
                # The state moves before the index is handed out: once the caller holds the last
                # index of the epoch, the state already names the next epoch.
                if position == self._length:
                    self._epoch, self._yielded = epoch + 1, 0
                else:
                    self._yielded = position
                yield index
        if start >= self._length and generation == self._generation:  # an empty dataset
            self._epoch, self._yielded = epoch + 1, 0

    # --- state ------------------------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """The position: ``{"epoch", "yielded", "seed", "length", "shuffle", "order_digest"}``.

        ``order_digest`` identifies the permutation of ``epoch``; ``load_state_dict`` recomputes it.
        """
        _, digest = self._order(self._epoch)
        return {"epoch": self._epoch, "yielded": self._yielded, "seed": self._seed,
                "length": self._length, "shuffle": self._shuffle, "order_digest": digest}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Continue from ``state_dict``: the next index is the one after the last one handed out.

        A state whose epoch is complete (``yielded == length``) continues at the start of the next
        epoch.  A state from a sampler with another seed, length or shuffle is refused with
        ``ValueError``: continuing a different order would repeat and skip samples silently.  So is
        a state whose ``order_digest`` differs from this sampler's permutation of that epoch.
        """
        if not isinstance(state_dict, dict):
            raise DataOrderUsageError(f"state_dict must be a dict, got {type(state_dict).__name__}")
        missing = [key for key in ("epoch", "yielded", "seed", "length", "shuffle")
                   if key not in state_dict]
        if missing:
            raise DataOrderStateError(f"not a StatefulSampler state: missing {', '.join(missing)}")
        mismatched = [f"{key} {state_dict[key]!r} (this sampler: {mine!r})"
                      for key, mine in (("seed", self._seed), ("length", self._length),
                                        ("shuffle", self._shuffle))
                      if state_dict[key] != mine]
        if mismatched:
            raise DataOrderStateError("the state belongs to a different data order and cannot be resumed: "
                                      + "; ".join(mismatched))
        epoch = _check_epoch(state_dict["epoch"])
        yielded = state_dict["yielded"]
        if isinstance(yielded, bool) or not isinstance(yielded, int) or \
                not 0 <= yielded <= self._length:
            raise DataOrderStateError(f"yielded must be an int in [0, {self._length}], got {yielded!r}")
        digest = state_dict.get("order_digest")
        if digest is not None and digest != self._order(epoch)[1]:
            raise DataOrderStateError(f"the state's order of epoch {epoch} differs from this sampler's "
                                      "(was torch's randperm changed?); resuming would reorder the samples")
        self._set_position(epoch, yielded)


class _SeededDataset(Dataset):
    """Loads ``(epoch, index)`` keys as ``dataset[index]`` with the CPU generators reseeded.

    In a worker the generators belong to the worker and are left as the sample left them; in the
    main process they are the training loop's, so their states are restored afterwards.
    """

    def __init__(self, dataset: Any, seed: int) -> None:
        self.dataset = dataset
        self.seed = seed

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: tuple[int, int]) -> Any:
        epoch, index = key
        seed = sample_seed(self.seed, epoch, index)
        if get_worker_info() is not None:
            _seed_cpu_generators(seed)
            return self.dataset[index]
        torch_state = torch.default_generator.get_state()
        random_state = random.getstate()
        numpy_state = _np.random.get_state() if _np is not None else None
        try:
            _seed_cpu_generators(seed)
            return self.dataset[index]
        finally:
            torch.default_generator.set_state(torch_state)
            random.setstate(random_state)
            if _np is not None:
                _np.random.set_state(numpy_state)


def _seed_cpu_generators(seed: int) -> None:
    # torch.default_generator only: torch.manual_seed would reseed the CUDA generators too, which in
    # the main process are the training loop's.
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    if _np is not None:
        _np.random.seed(seed & 0xFFFFFFFF)


class _EpochBatches(Sampler[List[Any]]):
    """The batch sampler handed to ``DataLoader``: the batches of one epoch from a start position.

    ``StatefulDataLoader`` sets the plan before each ``iter()`` of its ``DataLoader``; the workers
    may run ahead through this plan without moving the saved position.
    """

    def __init__(self, batch_size: int, drop_last: bool, keyed: bool) -> None:
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.keyed = keyed
        self.epoch = 0
        self.order = torch.empty(0, dtype=torch.int64)
        self.start = 0
        self.full_length = 0

    def plan(self, epoch: int, order: torch.Tensor, start: int) -> None:
        self.epoch, self.order, self.start = epoch, order, start

    def end(self) -> int:
        """Where the epoch ends: the length, less the incomplete last batch under drop_last."""
        length = len(self.order)
        if not self.drop_last:
            return length
        return self.start + (length - self.start) // self.batch_size * self.batch_size

    def __iter__(self) -> Iterator[List[Any]]:
        # The plan is read now: a later plan() must not change an iteration already begun.
        return self._iterate(self.epoch, self.order, self.start, self.end())

    def _iterate(self, epoch: int, order: torch.Tensor, start: int,
                 end: int) -> Iterator[List[Any]]:
        for begin in range(start, end, self.batch_size):
            indices = order[begin:min(begin + self.batch_size, end)].tolist()
            yield [(epoch, index) for index in indices] if self.keyed else indices

    def __len__(self) -> int:
        """Batches in a whole epoch, so that ``len(DataLoader)`` means what it usually does."""
        if self.drop_last:
            return self.full_length // self.batch_size
        return (self.full_length + self.batch_size - 1) // self.batch_size


class StatefulDataLoader:
    """A ``DataLoader`` over a map-style dataset whose position can be saved and resumed exactly.

    Each ``iter()`` runs the rest of the current epoch -- the whole epoch unless a state was loaded
    or an earlier iteration stopped part-way -- and the epoch advances when its last batch has been
    handed out.  ``state_dict()`` after the consumer has received ``k`` batches of an epoch restores,
    in a fresh loader, to batch ``k + 1``, whatever ``num_workers`` and ``prefetch_factor`` are:
    the position counted is the batches this loader's iterators have returned, not those its workers
    fetched.  After the last batch of an epoch the state already names the next epoch.

    Unlike ``DataLoader``, an iteration abandoned part-way (``break``) is not thrown away: the next
    ``iter()`` continues that epoch.  So ``state_dict()`` always describes exactly what the next
    ``iter()`` yields, in this process or in a restored one.  Drive a multi-epoch loop with
    ``while loader.epoch < epochs: for batch in loader: ...``; ``set_epoch`` is only needed to jump.

    Random numbers:

    * ``seed_each_sample=True`` (default): before ``dataset[index]`` the CPU generators of
      ``torch``, ``random`` and ``numpy`` are seeded with ``sample_seed(seed, epoch, index)``; in the
      main process (``num_workers=0``) their states are restored afterwards, so the training loop's
      random numbers are untouched.  Augmentation drawn from those generators inside
      ``__getitem__`` is then the same after a resume, for any ``num_workers`` and batch size.
    * Worker processes are seeded by ``DataLoader`` from a private generator seeded with a hash of
      ``(seed, epoch, start position)``; worker ``w`` gets that base seed ``+ w``.  The global
      generator of the main process is never drawn from (a plain ``DataLoader`` draws from it at
      every ``iter()``, which moves the training loop's random numbers after a resume).
    * Not covered: random numbers in ``collate_fn`` or a ``worker_init_fn``, generators other than
      the three above (CUDA, a dataset's own ``torch.Generator``), and any state a dataset keeps
      between calls.  With ``seed_each_sample=False`` a worker's stream depends on which batches it
      loaded before, so augmentation is reproducible run to run but not across a resume.  With
      ``persistent_workers=True`` the workers keep the seeds of the first ``iter()`` of the process.

    The length of the dataset is read at construction.  Only map-style datasets are supported; an
    ``IterableDataset`` has no index to resume at.

    Args:
        dataset: a map-style dataset (``__getitem__`` and ``__len__``).
        batch_size: samples per batch, >= 1.
        shuffle: permute each epoch; the order of epoch ``e`` depends only on ``(seed, e, len)``.
        seed: an integer in ``[0, 2**64)`` from which the orders and all seeds are derived.
        num_workers: as ``DataLoader``'s.
        drop_last: drop each epoch's incomplete last batch.
        collate_fn: as ``DataLoader``'s.
        seed_each_sample: reseed the CPU generators before each sample (see above).
        **dataloader_kwargs: passed to ``DataLoader`` (``pin_memory``, ``prefetch_factor``,
            ``persistent_workers``, ``worker_init_fn``, ``timeout``, ``multiprocessing_context``,
            ...).  ``sampler``, ``batch_sampler`` and ``generator`` are this class's to set.
    """

    def __init__(self, dataset: Any, batch_size: int = 1, shuffle: bool = True, seed: int = 0,
                 num_workers: int = 0, drop_last: bool = False,
                 collate_fn: Optional[Callable[[List[Any]], Any]] = None, *,
                 seed_each_sample: bool = True, **dataloader_kwargs: Any) -> None:
        if isinstance(dataset, IterableDataset):
            raise DataOrderUsageError("StatefulDataLoader needs a map-style dataset; an IterableDataset has no "
                                      "index to resume at")
        if not isinstance(dataset, Sized) or not hasattr(dataset, "__getitem__"):
            raise DataOrderUsageError("StatefulDataLoader needs a map-style dataset with __getitem__ and "
                                      f"__len__, got {type(dataset).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise DataOrderUsageError(f"batch_size must be an int >= 1, got {batch_size!r}")
        taken = sorted(set(dataloader_kwargs) & {"sampler", "batch_sampler", "generator"})
        if taken:
            raise DataOrderUsageError(f"StatefulDataLoader sets {', '.join(taken)} itself: the order and the "
                                      "seeds come from `seed`")
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.seed_each_sample = bool(seed_each_sample)
        self.sampler = StatefulSampler(dataset, shuffle=shuffle, seed=seed)
        self._batches_yielded = 0
        self._generation = 0
        self._batches = _EpochBatches(batch_size, self.drop_last, keyed=self.seed_each_sample)
        self._batches.full_length = len(self.sampler)
        self._worker_seeds = torch.Generator()
        self._loader = DataLoader(
            _SeededDataset(dataset, seed) if self.seed_each_sample else dataset,
            batch_sampler=self._batches, num_workers=num_workers, collate_fn=collate_fn,
            generator=self._worker_seeds, **dataloader_kwargs)

    @property
    def seed(self) -> int:
        return self.sampler.seed

    @property
    def epoch(self) -> int:
        """The epoch the next batch comes from."""
        return self.sampler.epoch

    @property
    def batches_yielded(self) -> int:
        """Batches of the current epoch handed out so far (counted since the epoch began)."""
        return self._batches_yielded

    @property
    def num_workers(self) -> int:
        return self._loader.num_workers

    def __len__(self) -> int:
        """Batches in a whole epoch."""
        return len(self._batches)

    def sample_seed(self, index: int, epoch: Optional[int] = None) -> int:
        """``sample_seed(seed, epoch, index)``; ``epoch`` defaults to the current one."""
        return sample_seed(self.seed, self.epoch if epoch is None else epoch, index)

    def set_epoch(self, epoch: int) -> None:
        """Go to the start of ``epoch``, unless the loader is in ``epoch`` already (position kept).

        Live iterators stop working.
        """
        if _check_epoch(epoch) != self.sampler.epoch:
            self.sampler.set_epoch(epoch)
            self._batches_yielded = 0
        self._generation += 1

    def __iter__(self) -> Iterator[Any]:
        """The rest of the current epoch, batch by batch (the whole epoch unless resumed)."""
        self._generation += 1
        epoch, start = self.sampler.epoch, self.sampler.yielded
        order, _ = self.sampler._order(epoch)
        self._batches.plan(epoch, order, start)
        end = self._batches.end()
        if start >= end:  # nothing left in this epoch (empty, or all dropped): it is over
            self.sampler._set_position(epoch + 1, 0)
            self._batches_yielded = 0
            return iter(())
        self._worker_seeds.manual_seed(_mix(b"workers", self.seed, epoch, start))
        # Like DataLoader, start the workers (and their prefetching) now, not at the first next().
        return self._iterate(self._generation, epoch, start, end, iter(self._loader))

    def _iterate(self, generation: int, epoch: int, position: int, end: int,
                 batches: Iterator[Any]) -> Iterator[Any]:
        try:
            while True:
                if generation != self._generation:
                    raise RuntimeError("this StatefulDataLoader iterator was superseded by a later "
                                       "iter(), set_epoch() or load_state_dict()")
                try:
                    batch = next(batches)
                except StopIteration:
                    raise RuntimeError(f"the DataLoader ended epoch {epoch} at sample {position} of "
                                       f"{end}") from None
                position = min(position + self.batch_size, end)
                # Count the batch before handing it out: a state saved while the caller holds it
                # resumes after it, and after the last batch of the epoch, at the next epoch.
                if position >= end:
                    self.sampler._set_position(epoch + 1, 0)
                    self._batches_yielded = 0
                else:
                    self.sampler._set_position(epoch, position)
                    self._batches_yielded += 1
                yield batch
                if position >= end:
                    return
        finally:
            del batches

    def state_dict(self) -> Dict[str, Any]:
        """The consumer's position: the sampler's state plus the batch bookkeeping.

        ``{"version", "sampler": StatefulSampler.state_dict(), "batches_yielded", "batch_size",
        "drop_last"}``; ``sampler["yielded"]`` counts the samples of the batches handed out.
        """
        return {"version": _STATE_VERSION, "sampler": self.sampler.state_dict(),
                "batches_yielded": self._batches_yielded, "batch_size": self.batch_size,
                "drop_last": self.drop_last}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Make the next ``iter()`` continue from ``state_dict``; live iterators stop working.

        The order must match (see ``StatefulSampler.load_state_dict``).  The batch size and
        ``drop_last`` may differ: the position is a sample count, so no sample is repeated or
        skipped, but the batches are cut anew from there.
        """
        if not isinstance(state_dict, dict):
            raise DataOrderUsageError(f"state_dict must be a dict, got {type(state_dict).__name__}")
        if state_dict.get("version") != _STATE_VERSION or "sampler" not in state_dict:
            raise DataOrderStateError("not a StatefulDataLoader state (version "
                                      f"{state_dict.get('version')!r}; expected {_STATE_VERSION})")
        batches_yielded = state_dict.get("batches_yielded", 0)
        if isinstance(batches_yielded, bool) or not isinstance(batches_yielded, int) or \
                batches_yielded < 0:
            raise DataOrderStateError(f"batches_yielded must be an int >= 0, got {batches_yielded!r}")
        self.sampler.load_state_dict(state_dict["sampler"])
        self._batches_yielded = batches_yielded if self.sampler.yielded else 0
        self._generation += 1
