"""Unit tests of mscale.data: StatefulSampler and StatefulDataLoader.

The promise under test: a loader restored from ``state_dict()`` continues with exactly the batches an
uninterrupted loader would have produced -- mid-epoch, at an epoch's end, with worker processes that
prefetch -- and the per-sample random numbers are the same too.
"""

import itertools
import random
import unittest
from typing import Any, Iterator, List

import numpy
import torch
from torch.utils.data import Dataset, IterableDataset, TensorDataset, get_worker_info

from mscale.data import DataOrderStateError, DataOrderUsageError, StatefulDataLoader, StatefulSampler, sample_seed

_WORKER_TAG = 0


class _Indexed(Dataset):
    """Sample i is the integer i."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        return index


class _Augmented(Dataset):
    """Sample i is i with one draw from each of torch's, random's and numpy's global generators."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([float(index), torch.rand(()).item(), random.random(),
                             float(numpy.random.rand())], dtype=torch.float64)


class _Tagged(Dataset):
    """Sample i is (i, the tag a worker_init_fn set in this process)."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([index, _WORKER_TAG])


class _WorkerSeed(Dataset):
    """Sample i is (i, the seed DataLoader gave the worker loading it)."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        info = get_worker_info()
        return torch.tensor([index, -1 if info is None else info.seed])


def _set_tag(worker_id: int) -> None:
    global _WORKER_TAG
    _WORKER_TAG = 100 + worker_id


def _as_list(batch: Any) -> Any:
    return batch.tolist() if isinstance(batch, torch.Tensor) else [_as_list(b) for b in batch]


def _stream(loader: StatefulDataLoader, epochs: int) -> Iterator[Any]:
    """Batches (as lists) until the loader has finished ``epochs`` epochs."""
    while loader.epoch < epochs:
        for batch in loader:
            yield _as_list(batch)


def _resumed(make, epochs: int, cuts: List[int]) -> List[Any]:
    """The batches of ``epochs`` epochs, restarting a fresh loader after each cut (a batch count)."""
    batches: List[Any] = []
    state = None
    for count in cuts + [None]:
        loader = make()
        if state is not None:
            loader.load_state_dict(state)
        stream = _stream(loader, epochs)
        taken = list(stream) if count is None else list(itertools.islice(stream, count))
        batches.extend(taken)
        state = loader.state_dict()
        stream.close()
    return batches


class StatefulSamplerTest(unittest.TestCase):
    def test_every_index_once_per_epoch_and_orders(self) -> None:
        sampler = StatefulSampler(10, seed=3)
        epochs = [list(sampler) for _ in range(3)]
        for order in epochs:
            self.assertEqual(sorted(order), list(range(10)))
        self.assertEqual(sampler.epoch, 3)
        self.assertNotEqual(epochs[0], epochs[1])
        self.assertNotEqual(epochs[1], epochs[2])
        again = StatefulSampler(list(range(10)), seed=3)
        self.assertEqual([list(again) for _ in range(3)], epochs)
        self.assertEqual([sampler.indices(e) for e in range(3)], epochs)
        self.assertNotEqual(list(StatefulSampler(10, seed=4)), epochs[0])
        self.assertEqual(len(sampler), 10)

    def test_unshuffled(self) -> None:
        sampler = StatefulSampler(5, shuffle=False)
        self.assertEqual(list(sampler), [0, 1, 2, 3, 4])
        self.assertEqual(list(sampler), [0, 1, 2, 3, 4])
        self.assertEqual(sampler.epoch, 2)

    def test_resume_mid_epoch(self) -> None:
        reference = StatefulSampler(9, seed=1)
        expected = list(reference) + list(reference)
        first = StatefulSampler(9, seed=1)
        seen = list(first)
        seen += list(itertools.islice(iter(first), 4))
        state = first.state_dict()
        self.assertEqual((state["epoch"], state["yielded"]), (1, 4))
        second = StatefulSampler(9, seed=1)
        second.load_state_dict(state)
        seen += list(second)
        self.assertEqual(seen, expected)
        self.assertEqual(second.epoch, 2)

    def test_state_at_epoch_end_names_next_epoch(self) -> None:
        sampler = StatefulSampler(6, seed=2)
        order0 = list(itertools.islice(iter(sampler), 6))  # the last index, but no StopIteration
        state = sampler.state_dict()
        self.assertEqual((state["epoch"], state["yielded"]), (1, 0))
        restored = StatefulSampler(6, seed=2)
        restored.load_state_dict(state)
        self.assertEqual(list(restored), sampler.indices(1))
        self.assertNotEqual(order0, sampler.indices(1))
        # A hand-written "epoch 0, all 6 yielded" resumes at epoch 1 as well.
        other = StatefulSampler(6, seed=2)
        other.load_state_dict({"epoch": 0, "yielded": 6, "seed": 2, "length": 6, "shuffle": True})
        self.assertEqual((other.epoch, other.yielded), (1, 0))

    def test_set_epoch_keeps_position_in_same_epoch(self) -> None:
        sampler = StatefulSampler(8, seed=5)
        sampler.set_epoch(4)
        first = list(itertools.islice(iter(sampler), 3))
        sampler.set_epoch(4)
        rest = list(sampler)
        self.assertEqual(first + rest, sampler.indices(4))
        sampler.set_epoch(2)
        self.assertEqual(list(sampler), sampler.indices(2))

    def test_refuses_mismatched_state(self) -> None:
        state = StatefulSampler(10, seed=1).state_dict()
        for other in (StatefulSampler(10, seed=2), StatefulSampler(11, seed=1),
                      StatefulSampler(10, seed=1, shuffle=False)):
            with self.assertRaisesRegex(ValueError, "different data order"):
                other.load_state_dict(state)
        sampler = StatefulSampler(10, seed=1)
        with self.assertRaisesRegex(ValueError, "yielded"):
            sampler.load_state_dict(dict(state, yielded=11))
        with self.assertRaisesRegex(ValueError, "missing epoch"):
            sampler.load_state_dict({k: v for k, v in state.items() if k != "epoch"})
        with self.assertRaisesRegex(ValueError, "randperm"):
            sampler.load_state_dict(dict(state, order_digest="0" * 32))
        with self.assertRaises(ValueError):
            StatefulSampler(10, seed=-1)
        # Coded, as the package's errors are: a state of another order, a bad argument.
        with self.assertRaisesRegex(DataOrderStateError, r"^error\[ERR_PY_052\]: .*different data order"):
            StatefulSampler(10, seed=2).load_state_dict(state)
        with self.assertRaisesRegex(DataOrderUsageError, r"^error\[ERR_PY_051\]: invalid data-order argument: seed"):
            StatefulSampler(10, seed=-1)

    def test_superseded_iterator_raises(self) -> None:
        sampler = StatefulSampler(4)
        old = iter(sampler)
        next(old)
        iter(sampler)
        with self.assertRaisesRegex(RuntimeError, "superseded"):
            next(old)


class StatefulDataLoaderTest(unittest.TestCase):
    def test_every_sample_once_per_epoch(self) -> None:
        loader = StatefulDataLoader(_Indexed(10), batch_size=4, seed=7)
        self.assertEqual(len(loader), 3)
        orders = []
        for epoch in range(3):
            self.assertEqual(loader.epoch, epoch)
            batches = [_as_list(b) for b in loader]
            self.assertEqual([len(b) for b in batches], [4, 4, 2])
            order = sum(batches, [])
            self.assertEqual(sorted(order), list(range(10)))
            orders.append(order)
        self.assertEqual(loader.epoch, 3)
        self.assertNotEqual(orders[0], orders[1])
        self.assertEqual(orders, [StatefulSampler(10, seed=7).indices(e) for e in range(3)])

    def _check_resume(self, num_workers: int, **kwargs: Any) -> None:
        dataset = TensorDataset(torch.arange(10))

        def make() -> StatefulDataLoader:
            return StatefulDataLoader(dataset, batch_size=3, seed=11, num_workers=num_workers,
                                      **kwargs)

        reference = _resumed(make, 3, [])
        self.assertEqual(len(reference), 12)  # 4 batches an epoch: 3, 3, 3, 1
        self.assertEqual(sorted(sum((b[0] for b in reference[:4]), [])), list(range(10)))
        # Cuts mid-epoch, twice in one epoch, at an epoch's end (4) and on the very last batch.
        for cuts in ([2], [1, 1, 5], [4], [7, 2], [11]):
            with self.subTest(cuts=cuts):
                self.assertEqual(_resumed(make, 3, cuts), reference)

    def test_resume_matches_uninterrupted_without_workers(self) -> None:
        self._check_resume(0)

    def test_resume_matches_uninterrupted_with_two_workers(self) -> None:
        self._check_resume(2, prefetch_factor=2)

    def test_resume_with_persistent_workers(self) -> None:
        loader = StatefulDataLoader(_Indexed(7), batch_size=2, seed=3, num_workers=2,
                                    persistent_workers=True)
        seen = []
        for batch in loader:  # abandon epoch 0 after one batch; the workers stay
            seen.append(_as_list(batch))
            break
        seen += [_as_list(b) for b in loader] + [_as_list(b) for b in loader]
        sampler = StatefulSampler(7, seed=3)
        self.assertEqual(sum(seen, []), sampler.indices(0) + sampler.indices(1))

    def test_state_counts_consumed_batches_not_prefetched(self) -> None:
        loader = StatefulDataLoader(_Indexed(40), batch_size=2, seed=1, num_workers=2,
                                    prefetch_factor=4)
        iterator = iter(loader)
        received = [_as_list(next(iterator)) for _ in range(3)]
        state = loader.state_dict()
        self.assertEqual((state["sampler"]["epoch"], state["sampler"]["yielded"]), (0, 6))
        self.assertEqual(state["batches_yielded"], 3)
        restored = StatefulDataLoader(_Indexed(40), batch_size=2, seed=1)
        restored.load_state_dict(state)
        rest = [_as_list(b) for b in restored]
        self.assertEqual(sum(received + rest, []), StatefulSampler(40, seed=1).indices(0))

    def test_state_saved_at_epoch_end(self) -> None:
        loader = StatefulDataLoader(_Indexed(10), batch_size=5, seed=2)
        iterator = iter(loader)
        first_epoch = [_as_list(next(iterator)) for _ in range(2)]  # last batch, no StopIteration
        state = loader.state_dict()
        self.assertEqual((state["sampler"]["epoch"], state["sampler"]["yielded"]), (1, 0))
        self.assertEqual(state["batches_yielded"], 0)
        restored = StatefulDataLoader(_Indexed(10), batch_size=5, seed=2)
        restored.load_state_dict(state)
        next_epoch = sum((_as_list(b) for b in restored), [])
        self.assertEqual(next_epoch, StatefulSampler(10, seed=2).indices(1))
        self.assertEqual(sum(first_epoch, []), StatefulSampler(10, seed=2).indices(0))
        # The same loader: the next iter() is epoch 1 too, not an empty rest of epoch 0.
        self.assertEqual(sum((_as_list(b) for b in loader), []), next_epoch)

    def test_break_then_iter_continues_the_epoch(self) -> None:
        loader = StatefulDataLoader(_Indexed(9), batch_size=2, seed=4)
        seen = []
        for batch in loader:
            seen.append(_as_list(batch))
            if len(seen) == 2:
                break
        self.assertEqual(loader.epoch, 0)
        seen += [_as_list(b) for b in loader]
        self.assertEqual(sum(seen, []), StatefulSampler(9, seed=4).indices(0))
        self.assertEqual(loader.epoch, 1)

    def test_drop_last(self) -> None:
        def make() -> StatefulDataLoader:
            return StatefulDataLoader(_Indexed(10), batch_size=4, seed=9, drop_last=True)

        loader = make()
        self.assertEqual(len(loader), 2)
        for epoch in range(2):
            batches = [_as_list(b) for b in loader]
            self.assertEqual([len(b) for b in batches], [4, 4])
            self.assertEqual(sum(batches, []), StatefulSampler(10, seed=9).indices(epoch)[:8])
        reference = _resumed(make, 3, [])
        self.assertEqual(len(reference), 6)
        for cuts in ([1], [2], [3, 2]):
            with self.subTest(cuts=cuts):
                self.assertEqual(_resumed(make, 3, cuts), reference)

    def test_epochs_without_batches_still_advance(self) -> None:
        for loader in (StatefulDataLoader(_Indexed(0), batch_size=2),
                       StatefulDataLoader(_Indexed(3), batch_size=4, drop_last=True)):
            self.assertEqual([list(loader), list(loader)], [[], []])
            self.assertEqual(loader.epoch, 2)

    def test_batch_size_may_change_on_resume(self) -> None:
        loader = StatefulDataLoader(_Indexed(12), batch_size=4, seed=6)
        iterator = iter(loader)
        head = [_as_list(next(iterator)) for _ in range(2)]
        bigger = StatefulDataLoader(_Indexed(12), batch_size=3, seed=6)
        bigger.load_state_dict(loader.state_dict())
        tail = [_as_list(b) for b in bigger]
        self.assertEqual([len(b) for b in tail], [3, 1])
        self.assertEqual(sum(head + tail, []), StatefulSampler(12, seed=6).indices(0))

    def test_refuses_mismatched_state(self) -> None:
        state = StatefulDataLoader(_Indexed(10), seed=1).state_dict()
        for other in (StatefulDataLoader(_Indexed(10), seed=2),
                      StatefulDataLoader(_Indexed(12), seed=1),
                      StatefulDataLoader(_Indexed(10), seed=1, shuffle=False)):
            with self.assertRaisesRegex(ValueError, "different data order"):
                other.load_state_dict(state)
        with self.assertRaisesRegex(ValueError, "version"):
            StatefulDataLoader(_Indexed(10), seed=1).load_state_dict(state["sampler"])

    def test_refuses_bad_arguments(self) -> None:
        class Stream(IterableDataset):
            def __iter__(self) -> Iterator[int]:
                return iter(range(3))

        with self.assertRaises(TypeError):
            StatefulDataLoader(Stream())
        with self.assertRaises(ValueError):
            StatefulDataLoader(_Indexed(3), batch_size=0)
        with self.assertRaisesRegex(DataOrderUsageError, r"^error\[ERR_PY_051\]: .*batch_size must be an int >= 1"):
            StatefulDataLoader(_Indexed(3), batch_size=0)
        for key in ("sampler", "batch_sampler", "generator"):
            with self.assertRaisesRegex(TypeError, key):
                StatefulDataLoader(_Indexed(3), **{key: None})

    def test_superseded_iterator_raises(self) -> None:
        loader = StatefulDataLoader(_Indexed(6), batch_size=2)
        old = iter(loader)
        next(old)
        loader.load_state_dict(loader.state_dict())
        with self.assertRaisesRegex(RuntimeError, "superseded"):
            next(old)

    def test_per_sample_random_numbers_survive_resume_and_workers(self) -> None:
        def make(num_workers: int):
            return lambda: StatefulDataLoader(_Augmented(10), batch_size=3, seed=5,
                                              num_workers=num_workers)

        reference = _resumed(make(0), 2, [])
        draws = [row[1:] for batch in reference for row in batch]
        self.assertEqual(len({tuple(d) for d in draws}), 20)  # fresh numbers per sample and epoch
        self.assertEqual(_resumed(make(2), 2, []), reference)
        self.assertEqual(_resumed(make(0), 2, [2, 3]), reference)
        self.assertEqual(_resumed(make(2), 2, [1, 4]), reference)
        # The numbers are those of sample_seed(seed, epoch, index).
        index = int(reference[0][0][0])
        torch.manual_seed(sample_seed(5, 0, index))
        self.assertEqual(reference[0][0][1], torch.rand(()).item())

    def test_main_process_generators_untouched(self) -> None:
        for num_workers in (0, 2):
            with self.subTest(num_workers=num_workers):
                torch.manual_seed(123)
                random.seed(123)
                numpy.random.seed(123)
                expected = (torch.rand(()).item(), random.random(), numpy.random.rand())
                torch.manual_seed(123)
                random.seed(123)
                numpy.random.seed(123)
                for _ in StatefulDataLoader(_Augmented(5), batch_size=2, num_workers=num_workers):
                    pass
                self.assertEqual((torch.rand(()).item(), random.random(), numpy.random.rand()),
                                 expected)

    def test_worker_seeds_are_deterministic(self) -> None:
        def seeds() -> List[List[int]]:
            loader = StatefulDataLoader(_WorkerSeed(), batch_size=2, seed=8, num_workers=2,
                                        seed_each_sample=False)
            return [row for _ in range(2) for batch in loader for row in _as_list(batch)]

        first = seeds()
        self.assertEqual(first, seeds())
        per_epoch = [{row[1] for row in first[:8]}, {row[1] for row in first[8:]}]
        self.assertEqual(len(per_epoch[0]), 2)  # two workers, two seeds
        self.assertNotEqual(per_epoch[0], per_epoch[1])  # new seeds each epoch

    def test_user_worker_init_fn_runs(self) -> None:
        loader = StatefulDataLoader(_Tagged(), batch_size=2, num_workers=2, worker_init_fn=_set_tag)
        tags = {row[1] for batch in loader for row in _as_list(batch)}
        self.assertEqual(tags, {100, 101})


if __name__ == "__main__":
    unittest.main()
