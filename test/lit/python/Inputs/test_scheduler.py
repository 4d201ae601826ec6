"""Unit tests of mscale.scheduler: the schedule's shape, exact resume, argument errors."""

import io
import math
import unittest
import warnings

import torch

from mscale.scheduler import MScaleLRScheduler, ResumeWarning, warn_if_plateau


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def make_optimizer(model, groups=1):
    if groups == 1:
        return torch.optim.AdamW(model.parameters(), lr=1.0)
    return torch.optim.AdamW([{"params": model[0].parameters()},
                              {"params": model[2].parameters(), "lr": 0.5}], lr=1.0)


def train_step(model, optimizer, step):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(16, 4, generator=g)
    y = torch.randn(16, 1, generator=g)
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def round_trip(state):
    """Serialize a state as a snapshot would, and read it back."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer)


def lrs_over(scheduler, optimizer, steps):
    """Step ``steps`` times; return the learning rates after each step."""
    result = []
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        result.append(scheduler.get_last_lr())
    return result


class ScheduleShapeTest(unittest.TestCase):
    BASE, MIN, START, W, T = 1e-3, 1e-5, 1e-4, 10, 110

    def scheduler(self, decay="cosine", **kwargs):
        args = dict(base_lr=self.BASE, warmup_steps=self.W, total_steps=self.T, decay=decay,
                    min_lr=self.MIN, warmup_start_lr=self.START)
        args.update(kwargs)
        optimizer = make_optimizer(make_model())
        return MScaleLRScheduler(optimizer, **args), optimizer

    def test_construction_sets_step_zero(self):
        scheduler, optimizer = self.scheduler()
        self.assertEqual(scheduler.last_epoch, 0)
        self.assertEqual(scheduler.get_last_lr(), [self.START])
        self.assertEqual(optimizer.param_groups[0]["lr"], self.START)
        self.assertEqual(optimizer.param_groups[0]["initial_lr"], self.BASE)

    def test_closed_form_values(self):
        b, m, s, w, t = self.BASE, self.MIN, self.START, self.W, self.T
        for decay in ("cosine", "linear", "constant"):
            scheduler, optimizer = self.scheduler(decay)
            seen = [scheduler.get_last_lr()[0]] + [v[0] for v in lrs_over(scheduler, optimizer,
                                                                          t + 20)]
            for n in range(0, w):
                self.assertAlmostEqual(seen[n], s + (b - s) * n / w, places=15)
            self.assertEqual(seen[w], b)  # peak exactly at the end of the warm-up
            for n in range(w, t):
                p = (n - w) / (t - w)
                expected = {"cosine": m + (b - m) * 0.5 * (1 + math.cos(math.pi * p)),
                            "linear": m + (b - m) * (1 - p),
                            "constant": b}[decay]
                self.assertAlmostEqual(seen[n], expected, places=15, msg=f"{decay} step {n}")
            for n in range(t, t + 21):
                self.assertEqual(seen[n], m, msg=f"{decay} step {n}")
            self.assertEqual(seen, [scheduler.lr_at(n)[0] for n in range(t + 21)])

    def test_midpoints(self):
        mid = (self.W + self.T) // 2
        cosine, _ = self.scheduler("cosine")
        linear, _ = self.scheduler("linear")
        half = self.MIN + (self.BASE - self.MIN) / 2
        self.assertAlmostEqual(cosine.lr_at(mid)[0], half, places=15)
        self.assertAlmostEqual(linear.lr_at(mid)[0], half, places=15)
        self.assertAlmostEqual(cosine.lr_at(self.W // 2)[0], (self.START + self.BASE) / 2,
                               places=15)

    def test_monotonic(self):
        for decay in ("cosine", "linear", "constant"):
            scheduler, _ = self.scheduler(decay)
            values = [scheduler.lr_at(n)[0] for n in range(self.T + 10)]
            warmup, after = values[:self.W + 1], values[self.W:]
            self.assertTrue(all(a < b for a, b in zip(warmup, warmup[1:])), decay)
            self.assertTrue(all(a >= b for a, b in zip(after, after[1:])), decay)
            self.assertEqual(max(values), self.BASE)
            self.assertEqual(min(values), self.MIN)

    def test_no_warmup(self):
        scheduler, _ = self.scheduler(warmup_steps=0)
        self.assertEqual(scheduler.get_last_lr(), [self.BASE])
        self.assertEqual(scheduler.lr_at(self.T), [self.MIN])

    def test_warmup_equals_total(self):
        scheduler, _ = self.scheduler(warmup_steps=self.T)
        self.assertAlmostEqual(scheduler.lr_at(self.T - 1)[0],
                               self.START + (self.BASE - self.START) * (self.T - 1) / self.T,
                               places=15)
        self.assertEqual(scheduler.lr_at(self.T), [self.MIN])

    def test_defaults(self):
        scheduler = MScaleLRScheduler(make_optimizer(make_model()))
        self.assertEqual(scheduler.hyper_parameters(),
                         {"base_lrs": [2e-5], "min_lrs": [0.0], "warmup_start_lrs": [0.0],
                          "warmup_steps": 1000, "total_steps": 100000, "decay": "cosine"})
        self.assertEqual(scheduler.lr_at(1000), [2e-5])
        self.assertEqual(scheduler.lr_at(100000), [0.0])
        self.assertAlmostEqual(scheduler.lr_at(500)[0], 1e-5, places=18)

    def test_no_warning_in_normal_use(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            scheduler, optimizer = self.scheduler()
            lrs_over(scheduler, optimizer, 5)

    def test_deprecated_step_with_epoch_uses_closed_form(self):
        scheduler, _ = self.scheduler()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scheduler.step(42)
        self.assertEqual(scheduler.get_last_lr(), scheduler.lr_at(42))


class ParamGroupsTest(unittest.TestCase):
    def test_one_base_lr_applies_to_every_group(self):
        optimizer = make_optimizer(make_model(), groups=2)
        scheduler = MScaleLRScheduler(optimizer, base_lr=1e-3, warmup_steps=0, total_steps=10)
        self.assertEqual(scheduler.get_last_lr(), [1e-3, 1e-3])
        self.assertEqual([g["lr"] for g in optimizer.param_groups], [1e-3, 1e-3])

    def test_per_group_values(self):
        optimizer = make_optimizer(make_model(), groups=2)
        scheduler = MScaleLRScheduler(optimizer, base_lr=[1e-3, 4e-3], warmup_steps=4,
                                      total_steps=20, min_lr=[0.0, 1e-4],
                                      warmup_start_lr=(1e-4, 0.0), decay="linear")
        self.assertEqual(scheduler.get_last_lr(), [1e-4, 0.0])
        self.assertEqual(scheduler.base_lrs, [1e-3, 4e-3])
        self.assertEqual([g["initial_lr"] for g in optimizer.param_groups], [1e-3, 4e-3])
        for _ in range(30):
            optimizer.step()
            scheduler.step()
            self.assertEqual(scheduler.get_last_lr(), [g["lr"] for g in optimizer.param_groups])
            self.assertEqual(scheduler.get_last_lr(), scheduler.lr_at(scheduler.last_epoch))
        self.assertEqual(scheduler.lr_at(4), [1e-3, 4e-3])
        self.assertEqual(scheduler.lr_at(20), [0.0, 1e-4])
        self.assertAlmostEqual(scheduler.lr_at(12)[1], 1e-4 + (4e-3 - 1e-4) * 0.5, places=15)

    def test_wrong_number_of_group_values(self):
        optimizer = make_optimizer(make_model(), groups=2)
        with self.assertRaisesRegex(ValueError, r"base_lr has 3 values .* 2 parameter groups"):
            MScaleLRScheduler(optimizer, base_lr=[1e-3, 1e-3, 1e-3])
        with self.assertRaisesRegex(ValueError, r"min_lr has 1 values"):
            MScaleLRScheduler(optimizer, min_lr=[0.0])

    def test_per_group_error_names_the_group(self):
        optimizer = make_optimizer(make_model(), groups=2)
        with self.assertRaisesRegex(ValueError, r"min_lr must be in \[0, base_lr=.*group 1"):
            MScaleLRScheduler(optimizer, base_lr=[1e-3, 1e-4], min_lr=5e-4)


class ResumeTest(unittest.TestCase):
    def run_resume(self, groups, decay, save_at=100, steps=250):
        kwargs = dict(base_lr=[3e-3, 1e-3][:groups] if groups > 1 else 3e-3, warmup_steps=37,
                      total_steps=211, decay=decay, min_lr=1e-6, warmup_start_lr=1e-7)
        model = make_model()
        optimizer = make_optimizer(model, groups)
        scheduler = MScaleLRScheduler(optimizer, **kwargs)
        reference = []
        for step in range(1, steps + 1):
            train_step(model, optimizer, step)
            scheduler.step()
            reference.append(([g["lr"] for g in optimizer.param_groups],
                              scheduler.get_last_lr()))
            if step == save_at:
                snapshot = round_trip({"model": model.state_dict(),
                                       "optimizer": optimizer.state_dict(),
                                       "scheduler": scheduler.state_dict()})
        final_weights = [p.detach().clone() for p in model.parameters()]

        # A fresh process: new objects, built as the training script builds them.
        model = make_model(seed=1)
        optimizer = make_optimizer(model, groups)
        scheduler = MScaleLRScheduler(optimizer, **kwargs)
        model.load_state_dict(snapshot["model"])
        optimizer.load_state_dict(snapshot["optimizer"])
        scheduler.load_state_dict(snapshot["scheduler"])
        self.assertEqual(scheduler.last_epoch, save_at)
        self.assertTrue(scheduler.get_last_lr() == reference[save_at - 1][1])
        resumed = []
        for step in range(save_at + 1, steps + 1):
            train_step(model, optimizer, step)
            scheduler.step()
            resumed.append(([g["lr"] for g in optimizer.param_groups],
                            scheduler.get_last_lr()))
        # Bit for bit: == on floats, not assertAlmostEqual.
        self.assertEqual(len(resumed), steps - save_at)
        for offset, (got, want) in enumerate(zip(resumed, reference[save_at:])):
            self.assertTrue(got == want, f"step {save_at + 1 + offset}: {got} != {want}")
        for got, want in zip(model.parameters(), final_weights):
            self.assertTrue(torch.equal(got, want))

    def test_resume_cosine(self):
        self.run_resume(1, "cosine")

    def test_resume_linear_two_groups(self):
        self.run_resume(2, "linear")

    def test_resume_constant(self):
        self.run_resume(1, "constant")

    def test_resume_during_warmup(self):
        self.run_resume(2, "cosine", save_at=20)

    def test_load_order_does_not_matter(self):
        optimizer = make_optimizer(make_model())
        scheduler = MScaleLRScheduler(optimizer, base_lr=1e-3, warmup_steps=5, total_steps=50)
        lrs_over(scheduler, optimizer, 17)
        state = round_trip({"o": optimizer.state_dict(), "s": scheduler.state_dict()})
        fresh_optimizer = make_optimizer(make_model())
        fresh = MScaleLRScheduler(fresh_optimizer, base_lr=1e-3, warmup_steps=5, total_steps=50)
        fresh.load_state_dict(state["s"])
        self.assertEqual(fresh_optimizer.param_groups[0]["lr"], scheduler.lr_at(17)[0])
        fresh_optimizer.load_state_dict(state["o"])
        self.assertEqual(lrs_over(fresh, fresh_optimizer, 40),
                         lrs_over(scheduler, optimizer, 40))

    def test_state_dict_holds_step_and_hyper_parameters(self):
        optimizer = make_optimizer(make_model())
        scheduler = MScaleLRScheduler(optimizer, base_lr=1e-3, warmup_steps=5, total_steps=50)
        lrs_over(scheduler, optimizer, 3)
        state = scheduler.state_dict()
        self.assertEqual(state["last_epoch"], 3)
        self.assertNotIn("optimizer", state)
        for key, value in scheduler.hyper_parameters().items():
            self.assertEqual(state[key], value)


class StrictLoadTest(unittest.TestCase):
    def saved(self, **kwargs):
        optimizer = make_optimizer(make_model())
        scheduler = MScaleLRScheduler(optimizer, **kwargs)
        lrs_over(scheduler, optimizer, 30)
        return round_trip(scheduler.state_dict())

    def fresh(self, **kwargs):
        optimizer = make_optimizer(make_model())
        return MScaleLRScheduler(optimizer, **kwargs), optimizer

    def test_refuses_different_hyper_parameters(self):
        base = dict(base_lr=1e-3, warmup_steps=10, total_steps=100)
        state = self.saved(**base)
        for change in (dict(base_lr=2e-3), dict(warmup_steps=11), dict(total_steps=200),
                       dict(decay="linear"), dict(min_lr=1e-5), dict(warmup_start_lr=1e-5)):
            scheduler, _ = self.fresh(**dict(base, **change))
            name = next(iter(change))
            with self.assertRaisesRegex(ValueError, r"different hyper-parameters.*strict=False"):
                scheduler.load_state_dict(state)
            with self.assertRaisesRegex(ValueError, name.replace("_lr", "")):
                scheduler.load_state_dict(state)
            self.assertEqual(scheduler.last_epoch, 0, "a refused load changes nothing")

    def test_non_strict_keeps_new_schedule_and_takes_step(self):
        state = self.saved(base_lr=1e-3, warmup_steps=10, total_steps=100)
        scheduler, optimizer = self.fresh(base_lr=1e-3, warmup_steps=10, total_steps=400)
        scheduler.load_state_dict(state, strict=False)
        self.assertEqual(scheduler.last_epoch, 30)
        self.assertEqual(scheduler.total_steps, 400)
        self.assertEqual(scheduler.get_last_lr(), scheduler.lr_at(30))
        self.assertEqual(optimizer.param_groups[0]["lr"], scheduler.lr_at(30)[0])
        optimizer.step()
        scheduler.step()
        self.assertEqual(scheduler.get_last_lr(), scheduler.lr_at(31))

    def test_refuses_foreign_state(self):
        scheduler, optimizer = self.fresh()
        other = torch.optim.lr_scheduler.StepLR(make_optimizer(make_model()), step_size=3)
        with self.assertRaisesRegex(ValueError, "not an MScaleLRScheduler state.*min_lrs"):
            scheduler.load_state_dict(other.state_dict())
        with self.assertRaisesRegex(ValueError, "not an MScaleLRScheduler state"):
            scheduler.load_state_dict(other.state_dict(), strict=False)
        with self.assertRaisesRegex(TypeError, "state_dict must be a mapping"):
            scheduler.load_state_dict([1, 2])

    def test_refuses_bad_step_and_group_count(self):
        state = self.saved()
        scheduler, _ = self.fresh()
        with self.assertRaisesRegex(ValueError, r"last_epoch'\] must be an integer >= 0"):
            scheduler.load_state_dict(dict(state, last_epoch=-3))
        two_groups = MScaleLRScheduler(make_optimizer(make_model(), groups=2))
        with self.assertRaisesRegex(ValueError, "1 parameter groups but the optimizer has 2"):
            two_groups.load_state_dict(state, strict=False)


class ArgumentErrorTest(unittest.TestCase):
    def check(self, error, pattern, **kwargs):
        optimizer = kwargs.pop("optimizer", None) or make_optimizer(make_model())
        with self.assertRaisesRegex(error, pattern):
            MScaleLRScheduler(optimizer, **kwargs)

    def test_not_an_optimizer(self):
        with self.assertRaisesRegex(TypeError, "optimizer must be a torch.optim.Optimizer, got "
                                               "Sequential"):
            MScaleLRScheduler(make_model())

    def test_steps(self):
        self.check(ValueError, r"warmup_steps must be >= 0, got -1", warmup_steps=-1)
        self.check(ValueError, r"total_steps must be >= 1, got 0", total_steps=0, warmup_steps=0)
        self.check(ValueError, r"total_steps must be >= 1, got -5", total_steps=-5)
        self.check(ValueError, r"warmup_steps must be <= total_steps \(100\), got 101",
                   warmup_steps=101, total_steps=100)
        self.check(TypeError, r"warmup_steps must be an integer, got float 10.0",
                   warmup_steps=10.0)
        self.check(TypeError, r"total_steps must be an integer, got bool", total_steps=True)
        self.check(TypeError, r"total_steps must be an integer, got str", total_steps="100")

    def test_learning_rates(self):
        self.check(ValueError, r"base_lr must be > 0, got 0.0", base_lr=0.0)
        self.check(ValueError, r"base_lr must be > 0, got -0.1", base_lr=-0.1)
        self.check(ValueError, r"min_lr must be in \[0, base_lr=0.001\], got 0.01",
                   base_lr=1e-3, min_lr=1e-2)
        self.check(ValueError, r"min_lr must be in \[0, base_lr=.*\], got -1e-05", min_lr=-1e-5)
        self.check(ValueError, r"warmup_start_lr must be in \[0, base_lr=0.001\], got 0.002",
                   base_lr=1e-3, warmup_start_lr=2e-3)
        self.check(ValueError, r"warmup_start_lr must be in .*got -1.0", warmup_start_lr=-1.0)

    def test_non_finite(self):
        for name in ("base_lr", "min_lr", "warmup_start_lr"):
            for bad in (float("nan"), float("inf"), -float("inf")):
                self.check(ValueError, rf"{name} must be a finite real number, got {bad!r}",
                           **{name: bad})
            self.check(ValueError, rf"{name}\[1\] must be a finite real number, got nan",
                       optimizer=make_optimizer(make_model(), groups=2),
                       **{name: [1e-6, float("nan")]})
            self.check(TypeError, rf"{name} must be a finite real number.*got str", **{name: "1"})
            self.check(TypeError, rf"{name} must be a finite real number.*got NoneType",
                       **{name: None})

    def test_decay(self):
        self.check(ValueError, r"decay must be one of 'cosine', 'linear', 'constant', got "
                               r"'exponential'", decay="exponential")
        self.check(ValueError, r"decay must be one of .*got 'Cosine'", decay="Cosine")
        self.check(TypeError, r"decay must be one of .*got NoneType None", decay=None)

    def test_lr_at(self):
        scheduler = MScaleLRScheduler(make_optimizer(make_model()))
        with self.assertRaisesRegex(ValueError, "step must be >= 0, got -1"):
            scheduler.lr_at(-1)
        with self.assertRaisesRegex(TypeError, "step must be an integer"):
            scheduler.lr_at(1.5)

    def test_failed_construction_leaves_optimizer_alone(self):
        optimizer = make_optimizer(make_model())
        with self.assertRaises(ValueError):
            MScaleLRScheduler(optimizer, decay="step")
        self.assertEqual(optimizer.param_groups[0]["lr"], 1.0)
        self.assertNotIn("initial_lr", optimizer.param_groups[0])


class PlateauWarningTest(unittest.TestCase):
    def test_plateau_warns(self):
        optimizer = make_optimizer(make_model())
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
        with self.assertWarnsRegex(UserWarning, "ReduceLROnPlateau cannot be resumed exactly.*"
                                                "validation metric") as caught:
            self.assertTrue(warn_if_plateau(plateau))
        self.assertIsInstance(caught.warning, ResumeWarning)
        self.assertEqual(caught.filename, __file__)

    def test_other_schedulers_do_not_warn(self):
        optimizer = make_optimizer(make_model())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertFalse(warn_if_plateau(MScaleLRScheduler(optimizer)))
            self.assertFalse(warn_if_plateau(
                torch.optim.lr_scheduler.StepLR(make_optimizer(make_model()), step_size=2)))
            self.assertFalse(warn_if_plateau(None))


if __name__ == "__main__":
    unittest.main()
