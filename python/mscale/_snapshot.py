"""ctypes binding of the worker runtime's snapshot library (``libmscale_snapshot.so``, C ABI in
``worker/snapshot/mscale_snapshot.h``).

The library does the part that must be fast and crash-safe: the on-disk and in-memory formats,
checksums, atomic commits, and restore of the newest snapshot that verifies.  This module only
moves bytes across the boundary; what goes into a snapshot is ``mscale.resume``'s business.
"""

from __future__ import annotations

import ctypes
import os
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from mscale import _native
from mscale.errors import SnapshotError

ABI_VERSION = 1
MEMORY, DISK, BOTH = 1, 2, 3  # tiers, as bit flags
KIND_MODEL, KIND_OPTIMIZER, KIND_RNG, KIND_OTHER = 1, 2, 3, 4

_u64 = ctypes.c_uint64
_p = ctypes.c_void_p


class _Options(ctypes.Structure):
    _fields_ = [("disk_dir", ctypes.c_char_p), ("memory_tier", ctypes.c_int), ("memory_fd", ctypes.c_int),
                ("memory_name", ctypes.c_char_p), ("keep", ctypes.c_uint32), ("memory_slots", ctypes.c_uint32)]


def _declare(lib: ctypes.CDLL) -> None:
    c_int, c_str, c_double = ctypes.c_int, ctypes.c_char_p, ctypes.c_double
    P = ctypes.POINTER
    sig = {
        "msc_snap_abi_version": (c_int, []),
        "msc_snap_last_error": (c_str, []),
        "msc_snap_open": (c_int, [P(_Options), P(_p)]),
        "msc_snap_close": (None, [_p]),
        "msc_snap_destroy_memory_tier": (None, [_p]),
        "msc_snap_begin": (c_int, [_p, _u64, P(_p)]),
        "msc_snap_add_blob": (c_int, [_p, c_str, c_int, _p, _u64]),
        "msc_snap_set_loader": (c_int, [_p, c_str, _u64, _u64, _u64, _u64, _u64]),
        "msc_snap_set_lr": (c_int, [_p, c_str, c_double, c_double, _u64, P(c_double), _u64]),
        "msc_snap_set_loss_scale": (c_int, [_p, c_double, _u64, P(_u64), P(c_double), _u64]),
        "msc_snap_commit": (c_int, [_p, c_int]),
        "msc_snap_abort": (None, [_p]),
        "msc_snap_restore_at_most": (c_int, [_p, _u64, P(_p)]),
        "msc_snap_list_steps": (_u64, [_p, P(_u64), _u64]),
        "msc_snap_restored_step": (_u64, [_p]),
        "msc_snap_restored_tier": (c_str, [_p]),
        "msc_snap_restored_source": (c_str, [_p]),
        "msc_snap_restored_skipped": (_u64, [_p]),
        "msc_snap_restored_skipped_reason": (c_str, [_p, _u64]),
        "msc_snap_restored_blob": (c_int, [_p, c_str, P(_p), P(_u64)]),
        "msc_snap_restored_free": (None, [_p]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


_lib: Optional[ctypes.CDLL] = None


def library() -> ctypes.CDLL:
    """The loaded library (once per process; the search: ``mscale._native``, with
    ``MSCALE_SNAPSHOT_LIB`` as the override); ERR_PY_020 when none can be loaded."""
    global _lib
    if _lib is None:
        try:
            _lib = _native.load(("libmscale_snapshot.so",), "MSCALE_SNAPSHOT_LIB", "msc_snap_abi_version",
                                ABI_VERSION, _declare)
        except _native.LoadFailure as e:
            raise SnapshotError("ERR_PY_020", str(e))
    return _lib


def _last_error() -> str:
    return (library().msc_snap_last_error() or b"").decode(errors="replace")


class Restored(NamedTuple):
    step: int
    tier: str            # "memory" | "disk"
    source: str          # a file, or "shm:... slot N"
    skipped: List[str]   # newer snapshots that failed verification, each a coded error
    blobs: Dict[str, bytes]


class LrMeta(NamedTuple):
    name: str
    base_lr: float
    current_lr: float
    last_step: int
    params: Sequence[float]


class LoaderMeta(NamedTuple):
    file: str
    byte_offset: int
    shuffle_seed: int
    epoch: int
    file_index: int
    samples_seen: int


class NothingToRestore(Exception):
    """Neither tier holds a valid snapshot; ``str()`` is the store's coded error (ERR_SNAP_003/004)."""

    def __init__(self, message: str, skipped: List[str]) -> None:
        super().__init__(message)
        self.skipped = skipped


class Store(_native.ClosesOnExit):
    """One snapshot store: a disk tier in ``directory`` and, unless ``memory_tier`` is False, the
    in-memory tier (the executor's memfd from ``MSCALE_SNAPSHOT_MEMFD``, else a shared-memory region
    named after the directory)."""

    def __init__(self, directory: str, *, memory_tier: bool = True, keep: int = 3, memory_slots: int = 2) -> None:
        lib = library()
        self._handle = _p()
        options = _Options(os.fsencode(directory), 1 if memory_tier else 0, -1, None, keep, memory_slots)
        failed = lib.msc_snap_open(ctypes.byref(options), ctypes.byref(self._handle))
        _native.follow_take_over()  # a warm standby is handed the job in there
        if failed:
            error = _last_error()
            if "ERR_SNAP_002" in error or "ERR_SNAP_001" in error:  # the directory itself
                raise SnapshotError("ERR_PY_021", directory, error)
            raise SnapshotError("ERR_PY_025", error)
        self.directory = directory

    def close(self) -> None:
        if self._handle:
            library().msc_snap_close(self._handle)
            self._handle = _p()

    def destroy_memory_tier(self) -> None:
        library().msc_snap_destroy_memory_tier(self._handle)

    def save(self, step: int, blobs: Sequence[Tuple[str, int, bytes]], tiers: int, *,
             loader: Optional[LoaderMeta] = None, lr: Optional[LrMeta] = None,
             loss_scale: Optional[Tuple[float, int, Sequence[Tuple[int, float]]]] = None) -> None:
        """Writes one snapshot of ``step`` to ``tiers``; each tier commits atomically or not at all.
        The GIL is released while the library writes, so a background thread can commit the disk
        tier while training goes on."""
        lib = library()
        writer = _p()
        if lib.msc_snap_begin(self._handle, step, ctypes.byref(writer)):
            raise SnapshotError("ERR_PY_025", _last_error())
        try:
            for name, kind, data in blobs:
                # `data` (bytes) stays referenced by the caller until commit returns: the library borrows it.
                buf = ctypes.c_char_p(data)
                if lib.msc_snap_add_blob(writer, name.encode(), kind, ctypes.cast(buf, _p), len(data)):
                    raise SnapshotError("ERR_PY_025", _last_error())
            if loader and lib.msc_snap_set_loader(writer, loader.file.encode(), loader.byte_offset,
                                                  loader.shuffle_seed, loader.epoch, loader.file_index,
                                                  loader.samples_seen):
                raise SnapshotError("ERR_PY_025", _last_error())
            if lr:
                params = (ctypes.c_double * max(1, len(lr.params)))(*lr.params)
                if lib.msc_snap_set_lr(writer, lr.name.encode(), lr.base_lr, lr.current_lr, lr.last_step,
                                       params, len(lr.params)):
                    raise SnapshotError("ERR_PY_025", _last_error())
            if loss_scale:
                scale, tracker, history = loss_scale
                n = len(history)
                steps = (_u64 * max(1, n))(*[s for s, _ in history])
                scales = (ctypes.c_double * max(1, n))(*[v for _, v in history])
                if lib.msc_snap_set_loss_scale(writer, scale, tracker, steps, scales, n):
                    raise SnapshotError("ERR_PY_025", _last_error())
        except BaseException:
            lib.msc_snap_abort(writer)
            raise
        if lib.msc_snap_commit(writer, tiers):  # frees the writer either way
            raise SnapshotError("ERR_PY_025", _last_error())

    def steps(self) -> List[int]:
        """The steps present in either tier (not verified), newest first."""
        lib = library()
        n = lib.msc_snap_list_steps(self._handle, None, 0)
        out = (_u64 * max(1, n))()
        n = min(n, lib.msc_snap_list_steps(self._handle, out, n))
        return [int(out[i]) for i in range(n)]

    def restore(self, names: Sequence[str], at_most: int = 2**64 - 1) -> Restored:
        """The newest snapshot of step <= ``at_most`` that verifies, with the blobs in ``names`` that
        it has copied out (a name it lacks is absent from ``blobs``).  Raises ``NothingToRestore``
        when there is none."""
        lib = library()
        handle = _p()
        if lib.msc_snap_restore_at_most(self._handle, at_most, ctypes.byref(handle)):
            raise NothingToRestore(_last_error(), [])
        try:
            skipped = [lib.msc_snap_restored_skipped_reason(handle, i).decode(errors="replace")
                       for i in range(lib.msc_snap_restored_skipped(handle))]
            blobs: Dict[str, bytes] = {}
            for name in names:
                data, size = _p(), _u64()
                if lib.msc_snap_restored_blob(handle, name.encode(), ctypes.byref(data), ctypes.byref(size)) == 0:
                    blobs[name] = ctypes.string_at(data, size.value) if size.value else b""
            return Restored(int(lib.msc_snap_restored_step(handle)), lib.msc_snap_restored_tier(handle).decode(),
                            lib.msc_snap_restored_source(handle).decode(errors="replace"), skipped, blobs)
        finally:
            lib.msc_snap_restored_free(handle)
