"""MegaScale-Omni for PyTorch training scripts.

Exact resume is the promise: after a fault the job continues at the step after the last snapshot,
with the same learning rate, the same samples in the same order and the same random numbers, so
the loss of every step equals that of a run that never failed.

This package grows module by module (issue 13):

* ``mscale.scheduler`` -- ``MScaleLRScheduler``, a step-based warm-up + decay schedule whose whole
  state is its step, so a restored job continues the curve exactly.
* ``mscale.data`` -- ``StatefulSampler`` and ``StatefulDataLoader``: a data order that resumes
  mid-epoch without repeating or skipping a sample, with worker processes.
"""

from mscale.data import StatefulDataLoader, StatefulSampler
from mscale.scheduler import MScaleLRScheduler

__all__ = ["MScaleLRScheduler", "StatefulDataLoader", "StatefulSampler"]
