"""A step-based learning-rate schedule whose whole state is its step.

``MScaleLRScheduler`` computes the learning rate of step ``n`` as a pure function of ``n`` and of
its hyper-parameters: linear warm-up, then cosine, linear or constant decay to a floor. Nothing is
accumulated from one step to the next, so a job restored from a snapshot taken at step ``N`` sets,
at step ``N + 1`` and every later step, bit for bit the learning rate that a run that never
stopped would have set.

``warn_if_plateau`` names the one common PyTorch scheduler that cannot keep that promise,
``ReduceLROnPlateau``: its decisions depend on validation losses that a restart may not have.

Example::

    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    scheduler = MScaleLRScheduler(optimizer, base_lr=2e-5, warmup_steps=1000,
                                  total_steps=100000)
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()

    snapshot = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Dict, List, Mapping, Sequence, Union

from torch.optim import Optimizer
from torch.optim import lr_scheduler as _torch_lr_scheduler

__all__ = ["DECAYS", "MScaleLRScheduler", "ResumeWarning", "warn_if_plateau"]

#: The decay shapes that ``MScaleLRScheduler`` accepts after its warm-up.
DECAYS = ("cosine", "linear", "constant")

# Names of the attributes that define the schedule. ``load_state_dict`` compares them between the
# snapshot and this scheduler; ``base_lrs`` is the attribute PyTorch's base class already keeps.
_HYPER_PARAMETERS = ("base_lrs", "min_lrs", "warmup_start_lrs", "warmup_steps", "total_steps",
                     "decay")

# PyTorch 1.13 calls the base class ``_LRScheduler``; 2.x keeps that name as a subclass of
# ``LRScheduler``, so subclassing it works with both.
_BaseScheduler = _torch_lr_scheduler._LRScheduler

LrArg = Union[float, Sequence[float]]


class ResumeWarning(UserWarning):
    """A training state that a restart cannot restore exactly."""


def _check_real(name: str, value: Any) -> float:
    """Return ``value`` as a float if it is a finite real number; raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {type(value).__name__} "
                        f"{value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return result


def _check_int(name: str, value: Any) -> int:
    """Return ``value`` as an int if it is an integer (not a bool); raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def _per_group(name: str, value: LrArg, num_groups: int) -> List[float]:
    """Expand a learning rate given once or once per parameter group into one per group."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (numbers.Real, Sequence)):
        raise TypeError(f"{name} must be a finite real number or a sequence of one per parameter "
                        f"group, got {type(value).__name__} {value!r}")
    if isinstance(value, Sequence):
        if len(value) != num_groups:
            raise ValueError(f"{name} has {len(value)} values but the optimizer has {num_groups} "
                             f"parameter groups; give one value, or one per group")
        return [_check_real(f"{name}[{i}]", v) for i, v in enumerate(value)]
    return [_check_real(name, value)] * num_groups


class MScaleLRScheduler(_BaseScheduler):
    """Linear warm-up, then cosine, linear or constant decay, as a pure function of the step.

    The step count is ``last_epoch``, as in every PyTorch scheduler: construction sets the
    learning rate of step 0, and the ``n``-th call of :meth:`step` (after the ``n``-th
    ``optimizer.step()``) sets that of step ``n``. With ``W = warmup_steps``,
    ``T = total_steps``, ``b = base_lr``, ``m = min_lr`` and ``s = warmup_start_lr``::

        step n < W        lr = s + (b - s) * n / W
        W <= n < T        p  = (n - W) / (T - W)
                          cosine:   lr = b - (b - m) * (1 - cos(pi * p)) / 2
                          linear:   lr = b - (b - m) * p
                          constant: lr = b
        n >= T            lr = m

    Every decay reaches ``min_lr`` at ``total_steps`` and stays there; ``constant`` holds
    ``base_lr`` until then. ``warmup_steps = 0`` starts at ``base_lr``; ``warmup_steps ==
    total_steps`` warms up and then drops to ``min_lr``.

    Parameter groups: ``base_lr``, ``min_lr`` and ``warmup_start_lr`` each take one number, which
    applies to every group, or a sequence with one number per group. The scheduler, not the
    optimizer's ``lr`` argument, sets the learning rates: each group's ``initial_lr`` is set to
    its ``base_lr`` and its ``lr`` to the value of the current step.

    Exact resume: :meth:`state_dict` holds the step and the hyper-parameters. Loading it (see
    :meth:`load_state_dict`) restores the step and sets each group's ``lr`` to that of the
    restored step, so the next :meth:`step` continues the curve of an uninterrupted run bit for
    bit. Resuming goes through ``state_dict``; there is no ``last_epoch`` argument.

    Args:
        optimizer: The optimizer whose parameter groups' learning rates are scheduled.
        base_lr: Peak learning rate, reached at the end of the warm-up. Finite and > 0; one
            value or one per parameter group.
        warmup_steps: Steps of linear warm-up, 0 <= warmup_steps <= total_steps.
        total_steps: Step at which the decay reaches ``min_lr``, >= 1.
        decay: Shape after the warm-up: ``"cosine"``, ``"linear"`` or ``"constant"``.
        min_lr: Floor reached at ``total_steps``, 0 <= min_lr <= base_lr; one value or one per
            parameter group.
        warmup_start_lr: Learning rate at step 0 of the warm-up, 0 <= warmup_start_lr <=
            base_lr; one value or one per parameter group.
        verbose: Print each update, as PyTorch's schedulers do.

    Raises:
        TypeError: ``optimizer`` is not a ``torch.optim.Optimizer``, or an argument has the
            wrong type (a step count that is not an integer, a learning rate that is not a
            real number, a ``decay`` that is not a string).
        ValueError: An argument is out of range or not finite, ``decay`` is unknown, or a
            per-group sequence does not have one value per parameter group.
    """

    def __init__(self, optimizer: Optimizer, base_lr: LrArg = 2e-5, warmup_steps: int = 1000,
                 total_steps: int = 100000, decay: str = "cosine", min_lr: LrArg = 0.0,
                 warmup_start_lr: LrArg = 0.0, verbose: bool = False) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got "
                            f"{type(optimizer).__name__}")
        num_groups = len(optimizer.param_groups)
        base_lrs = _per_group("base_lr", base_lr, num_groups)
        min_lrs = _per_group("min_lr", min_lr, num_groups)
        warmup_start_lrs = _per_group("warmup_start_lr", warmup_start_lr, num_groups)
        warmup_steps = _check_int("warmup_steps", warmup_steps)
        total_steps = _check_int("total_steps", total_steps)
        if not isinstance(decay, str):
            raise TypeError(f"decay must be one of {', '.join(map(repr, DECAYS))}, got "
                            f"{type(decay).__name__} {decay!r}")
        if decay not in DECAYS:
            raise ValueError(f"decay must be one of {', '.join(map(repr, DECAYS))}, got "
                             f"{decay!r}")
        if total_steps < 1:
            raise ValueError(f"total_steps must be >= 1, got {total_steps}")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        if warmup_steps > total_steps:
            raise ValueError(f"warmup_steps must be <= total_steps ({total_steps}), got "
                             f"{warmup_steps}")
        for i, (base, low, start) in enumerate(zip(base_lrs, min_lrs, warmup_start_lrs)):
            suffix = f" (parameter group {i})" if num_groups > 1 else ""
            if base <= 0.0:
                raise ValueError(f"base_lr must be > 0, got {base!r}{suffix}")
            if not 0.0 <= low <= base:
                raise ValueError(f"min_lr must be in [0, base_lr={base!r}], got {low!r}{suffix}")
            if not 0.0 <= start <= base:
                raise ValueError(f"warmup_start_lr must be in [0, base_lr={base!r}], got "
                                 f"{start!r}{suffix}")

        # The schedule must be complete before the base class's constructor takes step 0.
        self.min_lrs = min_lrs
        self.warmup_start_lrs = warmup_start_lrs
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.decay = decay
        for group, base in zip(optimizer.param_groups, base_lrs):
            group["initial_lr"] = base
        super().__init__(optimizer, last_epoch=-1, verbose=verbose)

    def lr_at(self, step: int) -> List[float]:
        """Return the learning rate of every parameter group at ``step``.

        A pure function of ``step`` and the hyper-parameters; it neither reads nor changes the
        scheduler's step or the optimizer.

        Args:
            step: A step count, >= 0.

        Returns:
            One learning rate per parameter group.

        Raises:
            TypeError: ``step`` is not an integer.
            ValueError: ``step`` is negative.
        """
        step = _check_int("step", step)
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        return [self._group_lr(step, base, low, start)
                for base, low, start in zip(self.base_lrs, self.min_lrs, self.warmup_start_lrs)]

    def _group_lr(self, step: int, base: float, low: float, start: float) -> float:
        """The closed form of the schedule for one parameter group."""
        if step < self.warmup_steps:
            return start + (base - start) * step / self.warmup_steps
        if step >= self.total_steps:
            return low
        progress = (step - self.warmup_steps) / (self.total_steps - self.warmup_steps)
        # Written as base minus a drop, so that the first step after the warm-up is exactly
        # base_lr; the end, exactly min_lr, is the branch above.
        if self.decay == "cosine":
            return base - (base - low) * 0.5 * (1.0 - math.cos(math.pi * progress))
        if self.decay == "linear":
            return base - (base - low) * progress
        return base

    def get_lr(self) -> List[float]:
        """Return the learning rates of the current step (``last_epoch``); see :meth:`lr_at`."""
        return self.lr_at(self.last_epoch)

    def _get_closed_form_lr(self) -> List[float]:
        # Used by the deprecated ``step(epoch)``; the schedule is closed-form already.
        return self.lr_at(self.last_epoch)

    def hyper_parameters(self) -> Dict[str, Any]:
        """Return the values that define the schedule, as stored in :meth:`state_dict`."""
        return {name: getattr(self, name) for name in _HYPER_PARAMETERS}

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> None:
        """Restore the step of a snapshot and set the learning rates of that step.

        After loading, each parameter group's ``lr`` and ``get_last_lr()`` are those of the
        restored step, computed by :meth:`lr_at`, whether the optimizer's state is loaded before
        or after this call; the next :meth:`step` sets the learning rate of the following step.

        Args:
            state_dict: A dict returned by :meth:`state_dict` of an ``MScaleLRScheduler``.
            strict: If True (the default), refuse a snapshot whose hyper-parameters differ from
                this scheduler's, since a restart must not silently change the schedule. If
                False, take the step (and step counters) from the snapshot and keep this
                scheduler's hyper-parameters: the schedule changes deliberately from the
                restored step on.

        Raises:
            TypeError: ``state_dict`` is not a mapping.
            ValueError: The snapshot is not an ``MScaleLRScheduler`` state, its step is invalid,
                or (with ``strict=True``) its hyper-parameters differ from this scheduler's.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping returned by "
                            f"MScaleLRScheduler.state_dict(), got {type(state_dict).__name__}")
        missing = [name for name in ("last_epoch",) + _HYPER_PARAMETERS if name not in state_dict]
        if missing:
            raise ValueError(f"state_dict is not an MScaleLRScheduler state: it lacks "
                             f"{', '.join(missing)}")
        step = state_dict["last_epoch"]
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"state_dict['last_epoch'] must be an integer >= 0, got {step!r}")
        saved_groups = len(state_dict["base_lrs"])
        if saved_groups != len(self.optimizer.param_groups):
            raise ValueError(f"state_dict has {saved_groups} parameter groups but the optimizer "
                             f"has {len(self.optimizer.param_groups)}")
        if strict:
            differences = [f"{name}: snapshot {state_dict[name]!r}, this scheduler "
                           f"{getattr(self, name)!r}"
                           for name in _HYPER_PARAMETERS
                           if _normalize(state_dict[name]) != _normalize(getattr(self, name))]
            if differences:
                raise ValueError("state_dict was saved by a scheduler with different "
                                 "hyper-parameters; a restart must not silently change the "
                                 "schedule (pass strict=False to keep this scheduler's "
                                 "hyper-parameters and take only the step): "
                                 + "; ".join(differences))
            self.__dict__.update(state_dict)
        else:
            schedule = self.hyper_parameters()
            self.__dict__.update(state_dict)
            self.__dict__.update(schedule)
        self.last_epoch = int(step)
        values = self.lr_at(self.last_epoch)
        for group, base, value in zip(self.optimizer.param_groups, self.base_lrs, values):
            group["initial_lr"] = base
            group["lr"] = value
        self._last_lr = list(values)


def _normalize(value: Any) -> Any:
    """Compare sequences by their items, whatever the container type a snapshot round-trip made."""
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    return value


def warn_if_plateau(scheduler: Any, stacklevel: int = 2) -> bool:
    """Warn that a ``ReduceLROnPlateau`` scheduler cannot be resumed exactly.

    ``ReduceLROnPlateau`` lowers the learning rate when a metric, usually a validation loss,
    stops improving. A restart restores its counters, but the losses of the steps between the
    snapshot and the fault are not replayed, and a validation that the failed run would have
    done may fall at a different step or not happen at all, so the restored job can decide
    differently from a run that never failed. A state registry calls this for every scheduler it
    is given; user code may call it as well.

    Args:
        scheduler: Any object; only ``torch.optim.lr_scheduler.ReduceLROnPlateau`` (and its
            subclasses) warns.
        stacklevel: Passed to :func:`warnings.warn`; the default points at the caller's line.
            A registry that calls this on behalf of user code passes a higher value.

    Returns:
        True if a warning was emitted, False otherwise.

    Warns:
        ResumeWarning: A ``UserWarning`` subclass, when ``scheduler`` is a
            ``ReduceLROnPlateau``.
    """
    if not isinstance(scheduler, _torch_lr_scheduler.ReduceLROnPlateau):
        return False
    warnings.warn(
        f"{type(scheduler).__name__} cannot be resumed exactly: it lowers the learning rate "
        f"from the validation metric passed to step(metric), and after a restart the metrics of "
        f"the steps since the last snapshot are not replayed, so the learning rate may differ "
        f"from that of a run that never failed. Use a step-based schedule such as "
        f"mscale.MScaleLRScheduler for exact resume.",
        ResumeWarning, stacklevel=stacklevel)
    return True
