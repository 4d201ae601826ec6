"""Data for a job whose world size changes: ``ElasticBatchSampler``.

An elastic job (``nodes = 2..4`` in its contract) may resume at another world size than the one it
snapshotted at.  Per-rank positions ("rank 2 has read 640 samples of its shard") mean nothing at a
new size: the shards themselves change.  This sampler keeps the position as a *ledger of the epoch*:
how many samples of the epoch's one order (``StatefulSampler``'s, a function of the seed and the
epoch alone) the whole job has consumed.  Each step consumes the next ``global_batch`` samples of
that order; rank ``r`` of ``W`` takes the ``r``-th of ``W`` contiguous, equal chunks of them.  The
position is the same number on every rank and at every size, so a job that resumes at another size
splits what is left of the epoch over its new ranks: every sample of every epoch is seen exactly
once, whatever the sizes, and each step's global batch is the same samples it would have been
without the change (the per-rank chunks, cut into ``micro_batch`` pieces, are the canonical
micro-batches of the step in order, whatever the size).

The global batch and the rank come, by default, from what the cluster tells each rank
(``MSCALE_GLOBAL_BATCH``, and ``torch.distributed`` or ``RANK``/``WORLD_SIZE``).

``DeterministicReduction`` makes the step itself independent of the world size: each micro-batch's
gradient is kept whole, every rank gathers all of them, and each sums them in the one canonical
order (the step's micro-batches in order), so that the parameters after each step are bit for bit
those of the same job at any other size.  An all-reduce instead sums in an order that depends on the
number of ranks, and floating-point addition is not associative: the runs then agree only to the
last bits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sized
from typing import Any, Dict, List, Optional, Tuple, Union

import torch
from torch.utils.data import Sampler

from mscale._environment import env_int
from mscale.data import DataOrderStateError, DataOrderUsageError, StatefulSampler

__all__ = ["DeterministicReduction", "ElasticBatchSampler", "world_from_environment"]


def world_from_environment() -> Tuple[int, int]:
    """``(rank, world_size)``: ``torch.distributed``'s when it is initialised, else ``RANK`` and
    ``WORLD_SIZE`` (what the cluster and torchrun set), else a job of one."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:  # a torch built without distributed
        pass
    rank, world = env_int("RANK"), env_int("WORLD_SIZE")
    if rank is None or world is None:
        return 0, 1
    return rank, world


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataOrderUsageError(f"{name} must be an int >= 1, got {value!r}")
    return value


class ElasticBatchSampler(Sampler[List[int]]):
    """This rank's indices of each step's global batch; a position that resumes at any world size.

    Args:
        data_source_or_len: the dataset (anything with ``len()``) or its length.
        global_batch: samples one step consumes across all ranks (default: ``MSCALE_GLOBAL_BATCH``).
        rank, world_size: this process's place (default: ``world_from_environment()``).
        micro_batch: if given, ``micro_batches(indices)`` cuts a step's indices into pieces of it.
        shuffle, seed: the epoch orders, as ``StatefulSampler``'s.

    Each item is the list of indices this rank trains on in one step.  An epoch of ``length``
    samples is ``ceil(length / global_batch)`` steps; the last one takes what is left (fewer than
    ``global_batch``), split as evenly as the ranks allow (a rank may get none, and must still take
    part in the step's collectives).  ``state_dict()`` is the ledger (epoch, samples consumed), the
    same on every rank; ``load_state_dict()`` takes a state saved at any world size.
    """

    def __init__(self, data_source_or_len: Union[Sized, int], global_batch: Optional[int] = None, *,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 micro_batch: Optional[int] = None, shuffle: bool = True, seed: int = 0) -> None:
        if global_batch is None:
            global_batch = env_int("MSCALE_GLOBAL_BATCH")
            if global_batch is None:
                raise DataOrderUsageError("global_batch is not given and MSCALE_GLOBAL_BATCH is not set")
        self._global = _positive("global_batch", global_batch)
        if (rank is None) != (world_size is None):
            raise DataOrderUsageError("rank and world_size must be given together")
        if rank is None:
            rank, world_size = world_from_environment()
        self._world = _positive("world_size", world_size)
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < self._world:
            raise DataOrderUsageError(f"rank must be an int in [0, {self._world}), got {rank!r}")
        self._rank = rank
        if self._global % self._world:
            raise DataOrderUsageError(f"a global batch of {self._global} samples does not split evenly over "
                                      f"{self._world} ranks")
        self._micro = None if micro_batch is None else _positive("micro_batch", micro_batch)
        if self._micro is not None and (self._global // self._world) % self._micro:
            raise DataOrderUsageError(f"{self._global // self._world} samples per rank are no whole number of "
                                      f"{self._micro}-sample micro-batches")
        self._order = StatefulSampler(data_source_or_len, shuffle=shuffle, seed=seed)
        self._length = len(self._order)
        self._epoch = 0
        self._consumed = 0
        self._generation = 0

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def consumed(self) -> int:
        """Samples of the current epoch the job (every rank) has consumed."""
        return self._consumed

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world

    def __len__(self) -> int:
        """Steps in a whole epoch."""
        return -(-self._length // self._global)

    def share(self, batch: int) -> Tuple[int, int]:
        """This rank's ``[begin, end)`` of a global batch of ``batch`` samples: the ``rank``-th of
        ``world_size`` contiguous chunks, the first ``batch % world_size`` one sample longer."""
        base, extra = divmod(batch, self._world)
        begin = self._rank * base + min(self._rank, extra)
        return begin, begin + base + (1 if self._rank < extra else 0)

    def micro_batches(self, indices: List[int]) -> List[List[int]]:
        """A step's indices cut into the contract's micro-batches (the last may be shorter at an
        epoch's end); the whole list when no ``micro_batch`` was given."""
        if not self._micro:
            return [indices]
        return [indices[i:i + self._micro] for i in range(0, len(indices), self._micro)] or [[]]

    def set_epoch(self, epoch: int) -> None:
        """Go to the start of ``epoch``, or keep the position if the sampler is in it already."""
        if epoch != self._epoch:
            self._epoch, self._consumed = epoch, 0
            self._generation += 1

    def __iter__(self) -> Iterator[List[int]]:
        """The rest of the current epoch, a step at a time."""
        self._generation += 1
        return self._iterate(self._generation, self._epoch, self._consumed)

    def _iterate(self, generation: int, epoch: int, start: int) -> Iterator[List[int]]:
        order = self._order.indices(epoch)
        for begin in range(start, self._length, self._global):
            if generation != self._generation:
                raise RuntimeError("this ElasticBatchSampler iterator was superseded by a later iter(), "
                                   "set_epoch() or load_state_dict()")
            batch = order[begin:begin + self._global]
            lo, hi = self.share(len(batch))
            # The ledger moves before the step's indices are handed out, as StatefulSampler's does:
            # once the last step of an epoch is out, the state names the next epoch.
            end = begin + len(batch)
            if end >= self._length:
                self._epoch, self._consumed = epoch + 1, 0
            else:
                self._consumed = end
            yield batch[lo:hi]

    def state_dict(self) -> Dict[str, Any]:
        """The ledger: ``{"epoch", "consumed", "global_batch", "seed", "length", "shuffle",
        "order_digest"}``, the same on every rank; no rank or world size in it."""
        order = self._order.state_dict()
        return {"epoch": self._epoch, "consumed": self._consumed, "global_batch": self._global,
                "seed": order["seed"], "length": order["length"], "shuffle": order["shuffle"],
                "order_digest": self._order._order(self._epoch)[1]}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Continue from a ledger saved at any world size.  A ledger of another data order (seed,
        length, shuffle, or a permutation torch draws differently) is refused (``DataOrderStateError``,
        ERR_PY_052, a ``ValueError``), with nothing changed,
        as is a position inside a step (``consumed`` not a whole number of global batches: the
        ledger of a job with another global batch)."""
        if not isinstance(state_dict, dict):
            raise DataOrderUsageError(f"state_dict must be a dict, got {type(state_dict).__name__}")
        missing = [k for k in ("epoch", "consumed", "global_batch", "seed", "length", "shuffle")
                   if k not in state_dict]
        if missing:
            raise DataOrderStateError(f"not an ElasticBatchSampler state: missing {', '.join(missing)}")
        consumed = state_dict["consumed"]
        if isinstance(consumed, bool) or not isinstance(consumed, int) or not 0 <= consumed <= self._length:
            raise DataOrderStateError(f"consumed must be an int in [0, {self._length}], got {consumed!r}")
        if consumed % self._global and consumed != self._length:
            raise DataOrderStateError(f"{consumed} samples consumed is no whole number of global batches of "
                                      f"{self._global}: the state is of a job with another global batch")
        # The order's own checks (seed, length, shuffle, digest) are StatefulSampler's.
        self._order.load_state_dict({"epoch": state_dict["epoch"], "yielded": consumed,
                                     "seed": state_dict["seed"], "length": state_dict["length"],
                                     "shuffle": state_dict["shuffle"],
                                     "order_digest": state_dict.get("order_digest")})
        self._epoch, self._consumed = self._order.epoch, self._order.yielded
        self._generation += 1


# Steps reduced through a DeterministicReduction in this process: ExactResume holds a job whose
# contract asks for deterministic_reduction (MSCALE_DETERMINISTIC_REDUCTION=1) to it, step by step.
_reductions = 0


def reductions() -> int:
    """How many steps this process has reduced through a ``DeterministicReduction``."""
    return _reductions


class DeterministicReduction:
    """A step's gradient as the mean of its micro-batches' gradients, summed in one canonical order
    whatever the world size.  Per step::

        for micro in sampler.micro_batches(indices):   # this rank's, in order
            loss_of(micro).backward()
            reduction.add()                             # keeps this micro-batch's gradient
        reduction.reduce()                              # every parameter's .grad: the step's
        optimizer.step()

    Rank ``r`` holds the ``r``-th contiguous run of the step's micro-batches (``ElasticBatchSampler``
    hands them out so), so the ranks' rows in rank order are the step's micro-batches in order.  The
    cost is an all-gather of every micro-batch's gradient (``M`` gradients a step to every rank)
    where DDP all-reduces one: for exact runs and the models that afford it, not for every job.
    Distributed when ``torch.distributed`` is initialised; a process alone reduces its own rows.
    """

    def __init__(self, parameters: Any) -> None:
        self._params = [p for p in parameters if p.requires_grad]
        if not self._params:
            raise DataOrderUsageError("DeterministicReduction needs parameters that require gradients")
        self._rows: List[torch.Tensor] = []

    def add(self) -> None:
        """Keep the gradients the last backward left (a parameter without one counts as zeros) as
        this rank's next micro-batch, and clear them for the next."""
        row = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1)
                         for p in self._params])
        self._rows.append(row.clone())
        for p in self._params:
            p.grad = None

    def reduce(self) -> int:
        """Set every parameter's ``.grad`` to the mean over the step's micro-batches, all ranks',
        summed in order; returns how many micro-batches the step had.  Collective."""
        width = sum(p.numel() for p in self._params)
        mine = torch.stack(self._rows) if self._rows else torch.zeros((0, width), dtype=self._params[0].dtype)
        self._rows = []
        rows = [mine]
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            counts = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
            dist.all_gather(counts, torch.tensor([mine.shape[0]], dtype=torch.int64))
            most = max(int(c) for c in counts)
            padded = torch.zeros((most, width), dtype=mine.dtype)
            padded[:mine.shape[0]] = mine
            gathered = [torch.empty_like(padded) for _ in counts]
            dist.all_gather(gathered, padded)
            rows = [g[:int(c)] for g, c in zip(gathered, counts)]
        ordered = torch.cat(rows)
        if ordered.shape[0] == 0:
            raise DataOrderUsageError("reduce() with no micro-batch on any rank: add() after each backward")
        total = ordered[0].clone()
        for i in range(1, ordered.shape[0]):  # one order, one addition at a time
            total += ordered[i]
        total /= ordered.shape[0]
        offset = 0
        for p in self._params:
            p.grad = total[offset:offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        global _reductions
        _reductions += 1
        return int(ordered.shape[0])

