"""MegaScale-Omni for PyTorch training scripts.

Exact resume is the promise: after a fault the job continues at the step after the last snapshot,
with the same learning rate, the same samples in the same order and the same random numbers, so
the loss of every step equals that of a run that never failed.

This package grows module by module (issue 13):

* ``mscale.scheduler`` -- ``MScaleLRScheduler``, a step-based warm-up + decay schedule whose whole
  state is its step, so a restored job continues the curve exactly.
* ``mscale.data`` -- ``StatefulSampler`` and ``StatefulDataLoader``: a data order that resumes
  mid-epoch without repeating or skipping a sample, with worker processes.
* ``mscale.elastic`` -- ``ElasticBatchSampler``: each rank's share of a step's global batch, its
  position a ledger of the epoch, so a job that resumes at another world size (``nodes = 2..4``)
  sees every sample of every epoch once; ``DeterministicReduction``: a step's gradient summed over
  its micro-batches in one order, so the run is bit for bit the same at every world size.
* ``mscale.resume`` -- ``ExactResume``: model, optimizer, scheduler, loader position, RNG states and
  loss scale captured at the plan's recovery points into the worker runtime's snapshot store, and
  restored on restart; ``mscale_snapshot()`` / ``mscale_restore()`` for explicit use.
* ``mscale.contract`` -- ``@mscale_contract``: the contract a training function needs, compiled by the
  project's own compiler; ``ContractError`` carries its diagnostics at the decorator's lines.
* ``mscale.io``, ``mscale.gds`` -- the worker runtime's io_uring reader at the plan's queue depth, role
  placement of loader threads and processes, the heartbeat, ``phase`` (where the job is on its demand
  curve), ``yield_requested`` / ``yield_now`` (a borrower yielding what it is lent),
  ``gpu_slice_update`` / ``acknowledge_gpu_slices`` (GPU slice hand-overs), ``rdma_queue_pair_update`` /
  ``acknowledge_rdma_queue_pairs`` (a borrower's lent queue pairs), ``stop_requested`` /
  ``stopped_at`` (a planned stop, which ``ExactResume.step_done`` handles: ``should_stop``); ``GDSLoader``.
* ``mscale.errors`` -- the package's coded errors (``error[ERR_PY_NNN]: ...``).
"""

import os as _os

from mscale import resume as _resume
from mscale.contract import ContractError, mscale_contract
from mscale.data import StatefulDataLoader, StatefulSampler
from mscale.elastic import DeterministicReduction, ElasticBatchSampler
from mscale.errors import MScaleError, ResumeError, SnapshotError, UsageError
from mscale.resume import ExactResume, exit_status_of, mscale_restore, mscale_snapshot
from mscale.gds import GDSLoader
from mscale.io import (UringReader, acknowledge_gpu_slices, acknowledge_rdma_queue_pairs, current_phase,
                       gpu_slice_update, phase, pin_to_role, rdma_queue_pair_update, role_worker_init,
                       wait_for_yield_request, yield_now, yield_requested)
from mscale.scheduler import MScaleLRScheduler

# A supervised worker (mscale-exec gave it a control page) tells its supervisor what it died of,
# whether or not it uses ExactResume: the error line for the log and `contract status`, and
# whether a restart can help.
if _os.environ.get("MSCALE_CONTROL_FD"):
    _resume._install_exit_status_hook()

__all__ = ["ContractError", "DeterministicReduction", "ElasticBatchSampler", "ExactResume", "GDSLoader", "MScaleError", "MScaleLRScheduler", "ResumeError",
           "SnapshotError", "StatefulDataLoader", "StatefulSampler", "UringReader", "UsageError",
           "acknowledge_gpu_slices", "acknowledge_rdma_queue_pairs", "current_phase", "exit_status_of", "gpu_slice_update", "mscale_contract", "mscale_restore", "mscale_snapshot", "phase", "pin_to_role",
           "rdma_queue_pair_update", "role_worker_init", "wait_for_yield_request", "yield_now", "yield_requested"]
