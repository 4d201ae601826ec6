"""ExactResume: what a snapshot captures comes back exactly, in a fresh process's objects."""
import os
import random
import shutil
import tempfile
import unittest
import warnings

import numpy as np
import torch

import mscale
from mscale.scheduler import ResumeWarning


class FakeScaler:
    """The part of torch.cuda.amp.GradScaler that ExactResume uses (the real one disables itself
    without CUDA): dynamic loss scaling halves on overflow and grows after `interval` good steps."""

    def __init__(self, scale=65536.0, interval=3):
        self.scale, self.tracker, self.interval = scale, 0, interval

    def is_enabled(self):
        return True

    def get_scale(self):
        return self.scale

    def update(self, overflow):
        if overflow:
            self.scale, self.tracker = self.scale / 2, 0
        else:
            self.tracker += 1
            if self.tracker == self.interval:
                self.scale, self.tracker = self.scale * 2, 0

    def state_dict(self):
        return {"scale": self.scale, "_growth_tracker": self.tracker, "interval": self.interval}

    def load_state_dict(self, state):
        self.scale, self.tracker, self.interval = state["scale"], state["_growth_tracker"], state["interval"]


class ExactResumeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mscale-resume-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def job(self, seed=0):
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        scheduler = mscale.MScaleLRScheduler(optimizer, base_lr=0.01, warmup_steps=4, total_steps=40)
        loader = mscale.StatefulDataLoader(list(range(30)), batch_size=4, shuffle=True, seed=3)
        scaler = FakeScaler()
        state = mscale.ExactResume(model=model, optimizer=optimizer, scheduler=scheduler, loader=loader,
                                   scaler=scaler, directory=self.dir, every=5, memory_tier=False)
        return state, model, optimizer, scheduler, loader, scaler

    def run_steps(self, job, first, last):
        state, model, optimizer, scheduler, loader, scaler = job
        out, step = [], first
        while step <= last:
            for batch in loader:
                x = torch.randn(len(batch), 6) + float(np.random.rand()) + random.random()
                loss = model(x).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scheduler.step()
                scaler.update(overflow=step % 7 == 0)
                out.append((step, loss.item().hex(), batch.tolist(), scheduler.get_last_lr()[0]))
                state.step_done(step)
                step += 1
                if step > last:
                    break
        return out

    def test_fresh_start_is_step_1(self):
        state = self.job()[0]
        self.assertEqual(state.restore(), 1)
        state.close()

    def test_resume_continues_every_part_exactly(self):
        whole = self.job()
        reference = self.run_steps(whole, 1, 23)
        history = list(whole[0]._loss_scale.changes)
        whole[0].close()
        shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        first = self.job()
        self.run_steps(first, 1, 12)  # snapshots at 5 and 10, then "crashes" after step 12
        first[0].close()
        second = self.job(seed=99)  # other initial weights: everything must come from the snapshot
        self.assertEqual(second[0].restore(required=True), 11)
        scale_at_10 = [v for s, v in history if s <= 10][-1]  # the last change up to the snapshot's step
        self.assertEqual(second[5].get_scale(), scale_at_10)
        # Loss, samples, LR, random numbers (dropout, torch, NumPy, Python) and the loss scale continue.
        self.assertEqual(self.run_steps(second, 11, 23), reference[10:])
        self.assertEqual(second[0]._loss_scale.changes, history)
        self.assertGreater(len(history), 3)  # overflows and growth happened: the history is not trivial
        second[0].close()

    def test_mscale_snapshot_and_restore_of_a_file(self):
        job = self.job()
        self.run_steps(job, 1, 3)
        mscale.mscale_snapshot(3)
        after3 = [p.detach().clone() for p in job[1].parameters()]
        self.run_steps(job, 4, 4)
        job[0].close()
        self.assertTrue(os.path.exists(os.path.join(self.dir, "snap-00000000000000000003.msnap")))
        other = self.job(seed=5)
        self.assertEqual(mscale.mscale_restore(os.path.join(self.dir, "snap-00000000000000000003.msnap")), 4)
        for a, b in zip(after3, other[1].parameters()):
            self.assertTrue(torch.equal(a, b))
        other[0].close()

    def test_plateau_scheduler_is_warned_about(self):
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mscale.ExactResume(model=model, optimizer=optimizer, scheduler=plateau, directory=self.dir,
                               memory_tier=False).close()
        self.assertTrue(any(issubclass(w.category, ResumeWarning) for w in caught))


if __name__ == "__main__":
    unittest.main()
