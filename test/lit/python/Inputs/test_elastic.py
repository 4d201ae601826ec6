"""ElasticBatchSampler: a ledger of the epoch that resumes at any world size (issue 29)."""
import os
import random
import unittest
from unittest import mock

from mscale.data import DataOrderStateError, DataOrderUsageError
from mscale.elastic import ElasticBatchSampler, world_from_environment
from mscale.errors import ResumeError

LENGTH, GLOBAL = 1000, 96  # 96 splits over 1, 2, 3 and 4 ranks; 1000 leaves a tail of 40 an epoch


def job(world, state=None, micro=None):
    """The ranks of a job of ``world``, resumed from ``state`` (a ledger saved at any size)."""
    ranks = [ElasticBatchSampler(LENGTH, GLOBAL, rank=r, world_size=world, seed=7, micro_batch=micro)
             for r in range(world)]
    if state is not None:
        for s in ranks:
            s.load_state_dict(state)
    return ranks


def steps(ranks, n):
    """``n`` steps in lockstep: each step's (epoch, [rank 0's indices, rank 1's, ...])."""
    its = [iter(s) for s in ranks]
    out = []
    for _ in range(n):
        epoch = ranks[0].epoch
        shares = []
        for it in its:
            try:
                shares.append(next(it))
            except StopIteration:
                return out
        out.append((epoch, shares))
    return out


def uninterrupted(total_steps):
    """The fixed-size run's global batches, step by step."""
    out = []
    ranks = job(4)
    while len(out) < total_steps:
        got = steps(ranks, total_steps - len(out))
        if not got:
            break
        out += [(e, sum(shares, [])) for e, shares in got]
    return out


class ElasticData(unittest.TestCase):
    def test_every_sample_once_per_epoch_and_each_step_the_same_global_batch_whatever_the_sizes(self):
        sizes = [4, 3, 2, 4, 1, 3, 2]
        rng = random.Random(29)
        history, state, world_steps = [], None, 0
        for world in sizes * 3:  # 21 size changes over several epochs
            ranks = job(world, state)
            n = rng.randint(1, 9)
            got = steps(ranks, n)
            if len(got) < n:  # an epoch ended: the next iter() goes on into the next epoch
                got += steps(ranks, n - len(got))
            # Every rank's ledger is the same number: any rank's state resumes the job.
            self.assertEqual(len({repr(s.state_dict()) for s in ranks}), 1)
            state = ranks[rng.randrange(world)].state_dict()
            history += [(e, sum(shares, [])) for e, shares in got]
            world_steps += len(got)
        self.assertEqual(history, uninterrupted(len(history)))
        by_epoch = {}
        for epoch, batch in history:
            by_epoch.setdefault(epoch, []).extend(batch)
        complete = [e for e in by_epoch if e < history[-1][0]]
        self.assertGreaterEqual(len(complete), 2)
        for e in complete:
            self.assertEqual(sorted(by_epoch[e]), list(range(LENGTH)), "epoch %d" % e)
        self.assertEqual(len(set(by_epoch[history[-1][0]])), len(by_epoch[history[-1][0]]))

    def test_micro_batches_are_the_steps_canonical_ones_at_every_size(self):
        canonical = None
        for world in (1, 2, 3):
            ranks = job(world, micro=16)
            shares = steps(ranks, 1)[0][1]
            micro = sum((s.micro_batches(share) for s, share in zip(ranks, shares)), [])
            self.assertTrue(all(len(m) == 16 for m in micro))
            if canonical is None:
                canonical = micro
            self.assertEqual(micro, canonical, "world %d" % world)

    def test_the_tail_of_an_epoch_is_split_as_evenly_as_the_ranks_allow(self):
        ranks = job(3)
        got = steps(ranks, len(ranks[0]))
        self.assertEqual(len(got), 11)  # ceil(1000 / 96)
        self.assertEqual([len(s) for s in got[-1][1]], [14, 13, 13])  # 40 left
        self.assertEqual(ranks[0].epoch, 1)
        self.assertEqual(ranks[0].consumed, 0)
        tiny = [ElasticBatchSampler(5, 4, rank=r, world_size=4, shuffle=False) for r in range(4)]
        self.assertEqual([s for _, s in steps(tiny, 2)], [[[0], [1], [2], [3]], [[4], [], [], []]])

    def test_defaults_come_from_what_the_cluster_tells_each_rank(self):
        env = {"RANK": "1", "WORLD_SIZE": "2", "MSCALE_GLOBAL_BATCH": "48"}
        with mock.patch.dict(os.environ, env):
            self.assertEqual(world_from_environment(), (1, 2))
            s = ElasticBatchSampler(100)
            self.assertEqual((s.rank, s.world_size), (1, 2))
            self.assertEqual(len(next(iter(s))), 24)
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(world_from_environment(), (0, 1))
            with self.assertRaisesRegex(ValueError, "MSCALE_GLOBAL_BATCH is not set"):
                ElasticBatchSampler(100)

    def test_bad_input_is_refused_and_changes_nothing(self):
        for kwargs, message in (({"rank": 3, "world_size": 3}, r"rank must be an int in \[0, 3\)"),
                                ({"rank": 0}, "rank and world_size must be given together"),
                                ({"rank": 0, "world_size": 5}, "does not split evenly over 5 ranks"),
                                ({"rank": 0, "world_size": 2, "micro_batch": 20}, "no whole number of 20-sample"),
                                ({"rank": 0, "world_size": 0}, "world_size must be an int >= 1")):
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(ValueError, message) as raised:
                    ElasticBatchSampler(LENGTH, GLOBAL, **kwargs)
                self.assertIsInstance(raised.exception, DataOrderUsageError)
                self.assertTrue(str(raised.exception).startswith("error[ERR_PY_051]: invalid data-order argument: "),
                                str(raised.exception))
        s = job(2)[0]
        steps([s], 1)
        before = s.state_dict()
        good = job(4)[0]
        steps([good], 2)
        for change, message in (({"seed": 8}, "different data order"), ({"consumed": 50}, "no whole number"),
                                ({"consumed": -1}, "consumed must be an int"), ({"order_digest": "0"}, "differs")):
            bad = dict(good.state_dict(), **change)
            with self.subTest(change=change):
                with self.assertRaisesRegex(ValueError, message) as raised:
                    s.load_state_dict(bad)
                self.assertIsInstance(raised.exception, DataOrderStateError)
                self.assertIsInstance(raised.exception, ResumeError)
                self.assertTrue(str(raised.exception).startswith(
                    "error[ERR_PY_052]: cannot resume the data order from this state: "), str(raised.exception))
                self.assertEqual(s.state_dict(), before)
        with self.assertRaisesRegex(ValueError, "missing consumed"):
            s.load_state_dict({"epoch": 0})


if __name__ == "__main__":
    unittest.main()
