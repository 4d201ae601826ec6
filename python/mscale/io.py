"""Reading training data through the worker runtime's io_uring reader, on the plan's cores.

``UringReader`` reads whole files or byte ranges into memory with the queue depth the plan gave the
role kept in flight (``MSCALE_ROLE_<ROLE>_IO_DEPTH``, exported by ``mscale-exec``), through
``libmscale_worker.so`` (C ABI in ``worker/mscale_worker.h``).  ``pin_to_role`` and
``role_worker_init`` put a process (every thread of it) on the role's CPUs
(``MSCALE_ROLE_<ROLE>_CPUS``); ``heartbeat`` reports progress on the supervisor's control page.
All of it goes through the worker runtime, so the variable names and the page layout have one home.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import threading
from typing import Callable, Iterable, List, Optional, Sequence, Tuple, Union

from mscale import _native
from mscale.errors import MScaleError, UsageError

__all__ = ["DataError", "PlacementError", "UringReader", "finishing", "heartbeat", "library",
           "failed", "nothing_to_resume", "pin_to_role", "report_throughput", "role_cpus", "role_io_depth",
           "role_worker_init", "stop_requested", "stopped_at", "supervised", "DEFAULT_QUEUE_DEPTH"]

ABI_VERSION = 1
LIBRARY_ENV = "MSCALE_WORKER_LIB"
LIBRARY_NAMES = ("libmscale_worker.so.%d" % ABI_VERSION, "libmscale_worker.so")
DEFAULT_QUEUE_DEPTH = 32  # when neither the caller nor the plan names one
STEP_RESTORING = (1 << 64) - 1

# A batch holds at most this many bytes of buffers (and files), so that reading a long list of
# paths does not need all of them in memory twice; the queue is refilled across a batch's files.
_BATCH_BYTES = 64 << 20
_BATCH_FILES = 4096
_SCRATCH_KEPT = 8 << 20

PathLike = Union[str, bytes, "os.PathLike[str]"]


class DataError(MScaleError):
    """Reading data through the worker runtime failed (its library, the reader, a file)."""


class PlacementError(MScaleError):
    """A process or thread cannot be put on its role's CPUs."""


class _Read(ctypes.Structure):
    _fields_ = [("path", ctypes.c_char_p), ("fd", ctypes.c_int), ("offset", ctypes.c_uint64),
                ("length", ctypes.c_uint64), ("buffer", ctypes.c_void_p), ("result", ctypes.c_int64),
                ("failed_open", ctypes.c_int32)]


_lib: Optional[ctypes.CDLL] = None
_lib_lock = threading.Lock()


def _declare(lib: ctypes.CDLL) -> None:
    c_int, c_uint, c_str, u64, p = ctypes.c_int, ctypes.c_uint, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p
    P = ctypes.POINTER
    signatures = {
        "msc_worker_abi_version": (c_int, []),
        "msc_worker_last_error": (c_str, []),
        "msc_worker_reader_open": (c_int, [c_uint, u64, P(p)]),
        "msc_worker_reader_close": (None, [p]),
        "msc_worker_reader_depth": (c_uint, [p]),
        "msc_worker_reader_max_in_flight": (c_uint, [p]),
        "msc_worker_reader_bytes_read": (u64, [p]),
        "msc_worker_read_file": (c_int, [p, c_str, p, u64, P(u64)]),
        "msc_worker_read_batch": (c_int, [p, P(_Read), u64, P(u64)]),
        "msc_worker_role_io_depth": (c_int, [c_str, P(c_uint)]),
        "msc_worker_role_cpus": (c_int, [c_str, P(c_uint), u64, P(u64)]),
        "msc_worker_pin_thread_to_role": (c_int, [c_str]),
        "msc_worker_pin_to_role": (c_int, [c_str]),
        "msc_worker_supervised": (c_int, []),
        "msc_worker_heartbeat": (None, [u64]),
        "msc_worker_finishing": (None, []),
        "msc_worker_nothing_to_resume": (None, []),
        "msc_worker_failed": (c_int, [c_str, c_int]),
        "msc_worker_report_throughput": (None, [ctypes.c_double]),
        "msc_worker_standby": (c_int, []),
        "msc_worker_take_over": (None, []),
        "msc_worker_enter_phase": (c_int, [c_str]),
        "msc_worker_current_phase": (c_int, [ctypes.c_char_p, u64]),
        "msc_worker_yield_requested": (ctypes.c_int64, []),
        "msc_worker_wait_yield_request": (c_int, [u64]),
        "msc_worker_yield": (c_int, []),
        "msc_worker_gpu_slices_pending": (ctypes.c_int64, [ctypes.c_char_p, u64]),
        "msc_worker_acknowledge_gpu_slices": (None, [u64]),
        "msc_worker_rdma_queue_pairs_pending": (ctypes.c_int64, [ctypes.c_char_p, u64]),
        "msc_worker_acknowledge_rdma_queue_pairs": (None, [u64]),
        "msc_worker_stop_requested": (u64, []),
        "msc_worker_stopped_at": (c_int, [u64]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def library() -> ctypes.CDLL:
    """The worker runtime's library, loaded once (the search: ``mscale._native``, with
    ``MSCALE_WORKER_LIB`` as the override); ``ERR_PY_040`` when none of the candidates loads or the
    one that does speaks another ABI version."""
    global _lib
    with _lib_lock:
        if _lib is None:
            try:
                _lib = _native.load(LIBRARY_NAMES, LIBRARY_ENV, "msc_worker_abi_version", ABI_VERSION, _declare)
            except _native.LoadFailure as e:
                raise DataError("ERR_PY_040", str(e))
        return _lib


def _last_error(lib: ctypes.CDLL) -> str:
    return (lib.msc_worker_last_error() or b"").decode("utf-8", "replace")


def _path_bytes(path: PathLike) -> bytes:
    return os.fsencode(path)


def _name(path: bytes) -> str:
    return os.fsdecode(path)


def _role_bytes(role: str) -> bytes:
    if not isinstance(role, str) or not role:
        raise UsageError("ERR_PY_044", "a role must be a non-empty string, got %r" % (role,))
    return role.encode("utf-8")


# ---- the role's resources ---------------------------------------------------------------------

def role_io_depth(role: str) -> Optional[int]:
    """The io_uring depth mscale-exec gave ``role`` (``MSCALE_ROLE_<ROLE>_IO_DEPTH``), or None when
    it gave none; ``ERR_PY_047`` when the variable is set but not a positive number."""
    lib = library()
    depth = ctypes.c_uint(0)
    rc = lib.msc_worker_role_io_depth(_role_bytes(role), ctypes.byref(depth))
    if rc == errno.ENOENT:
        return None
    if rc:
        raise DataError("ERR_PY_047", role, _last_error(lib))
    return depth.value


def _role_cpus(role: str, unset_ok: bool) -> List[int]:
    lib = library()
    count = ctypes.c_uint64(0)
    cpus = (ctypes.c_uint * 1024)()
    while True:
        rc = lib.msc_worker_role_cpus(_role_bytes(role), cpus, len(cpus), ctypes.byref(count))
        if rc == errno.ENOENT and unset_ok:
            return []
        if rc:
            raise PlacementError("ERR_PY_045", role, _last_error(lib))
        if count.value <= len(cpus):
            return list(cpus[:count.value])
        cpus = (ctypes.c_uint * count.value)()


def role_cpus(role: str) -> List[int]:
    """The CPUs mscale-exec gave ``role`` (``MSCALE_ROLE_<ROLE>_CPUS``); empty when it gave none,
    ``ERR_PY_045`` when the list does not parse."""
    return _role_cpus(role, unset_ok=True)


def pin_to_role(role: str, all_threads: bool = True) -> List[int]:
    """Pins this process (every thread of it; threads started later inherit the mask) or, with
    ``all_threads=False``, the calling thread to the CPUs of ``role``, and names the calling thread
    after the role.  Returns the CPUs.  ``ERR_PY_045`` when the role has no CPUs here,
    ``ERR_PY_046`` when the kernel refuses them."""
    cpus = _role_cpus(role, unset_ok=False)
    lib = library()
    name = _role_bytes(role)
    rc = lib.msc_worker_pin_to_role(name) if all_threads else lib.msc_worker_pin_thread_to_role(name)
    if rc:
        raise PlacementError("ERR_PY_046", role, _last_error(lib))
    return cpus


class RoleWorkerInit:
    """A ``worker_init_fn`` for ``torch.utils.data.DataLoader``: pins each loader process (all its
    threads) to the role's CPUs and names it after the role, then calls ``then(worker_id)`` if
    given.  A class rather than a closure so that loaders started with ``spawn`` can pickle it."""

    def __init__(self, role: str, then: Optional[Callable[[int], None]] = None) -> None:
        _role_bytes(role)
        self.role = role
        self.then = then

    def __call__(self, worker_id: int) -> None:
        pin_to_role(self.role)
        if self.then is not None:
            self.then(worker_id)

    def __repr__(self) -> str:
        return "role_worker_init(%r)" % self.role


def role_worker_init(role: str, then: Optional[Callable[[int], None]] = None) -> RoleWorkerInit:
    """``DataLoader(..., num_workers=N, worker_init_fn=role_worker_init("image_loader"))``."""
    return RoleWorkerInit(role, then)


# ---- the control page -------------------------------------------------------------------------

def supervised() -> bool:
    """True when this process runs under mscale-exec and has its control page."""
    return bool(library().msc_worker_supervised())


def heartbeat(step: Optional[int]) -> None:
    """Tells the supervisor the worker is alive: ``step`` is the last completed step, or None while
    the worker restores a snapshot and does not know its step yet.  Call it at least once per
    heartbeat interval (every step is fine: it is two stores to shared memory).  A no-op when the
    process is not supervised."""
    if step is None:
        value = STEP_RESTORING
    elif isinstance(step, int) and not isinstance(step, bool) and 0 <= step < STEP_RESTORING:
        value = step
    else:
        raise UsageError("ERR_PY_044", "a heartbeat's step must be an int in [0, 2**64 - 1), got %r" % (step,))
    library().msc_worker_heartbeat(value)
    _native.follow_take_over()


def finishing() -> None:
    """Tells the supervisor the work is done and the worker is exiting: tearing down data loader
    processes and a process group can take seconds on a busy node without a step to beat for, and
    that is not a hang (the supervisor allows an exit grace).  ``ExactResume.close()`` calls it.  A
    no-op when the process is not supervised."""
    library().msc_worker_finishing()
    _native.follow_take_over()


def nothing_to_resume() -> None:
    """Tells the supervisor this restarted worker found no valid snapshot and is exiting, so that it
    stops (ERR_EXEC_022) instead of restarting it again.  ``ExactResume`` calls it before it raises
    ERR_PY_022.  A no-op when the process is not supervised."""
    library().msc_worker_nothing_to_resume()


def failed(line: str, retry_cannot_fix: bool = False) -> None:
    """Tells the supervisor this worker is failing with error ``line`` (its first line, up to 255
    bytes, is kept): it logs the line and ``contract status`` shows it.  With ``retry_cannot_fix``
    a restart would fail the same way (a snapshot that does not fit the model, a wrong argument),
    so the supervisor stops with ERR_EXEC_030 instead of spending its restarts.  ``ExactResume``'s
    exit hook calls it for an uncaught error.  A no-op when the process is not supervised."""
    if not isinstance(line, str):
        raise UsageError("ERR_PY_044", "failed(line): the line must be a str, got %r" % (line,))
    library().msc_worker_failed(line.encode("utf-8", "replace"), 1 if retry_cannot_fix else 0)


def standby() -> bool:
    """True in a warm standby (the contract's ``fault_tolerance.standby_worker``) that has not been
    handed the job yet."""
    return bool(library().msc_worker_standby())


def take_over() -> None:
    """Returns once this process may do the worker's work: at once for a worker; a warm standby
    waits here, its start-up done and its state allocated, until the executor hands it the job
    after a fault (``MSCALE_RESTART_REASON`` is then set).  ``heartbeat()`` and opening snapshots
    (``ExactResume``) wait here too, so a standby never runs the job early; call it yourself after
    what is slow and touches nothing shared (imports, building the model) and before touching
    devices or data."""
    library().msc_worker_take_over()
    _native.follow_take_over()


def report_throughput(tflops: float) -> None:
    """The worker's achieved TFLOP/s, for the supervisor's monitor where the GPU backend has no
    per-slice counter."""
    library().msc_worker_report_throughput(float(tflops))
    _native.follow_take_over()


def stop_requested() -> int:
    """The step the executor asks this worker to stop after (a drain: the job moves to other nodes),
    0 when nothing is asked or the process is not supervised.  Loads only: cheap every step.
    ``ExactResume.step_done`` acts on it; a loop without ``ExactResume`` stops after exactly that
    step: it commits the step's snapshot to disk, calls ``stopped_at(step)`` and exits 0.  A request
    for a step already passed is not honoured: the worker runs on."""
    return int(library().msc_worker_stop_requested())


def stopped_at(step: int) -> None:
    """Tells the executor the snapshot of ``step`` is committed to the disk tier and the worker is
    exiting 0 for a planned move (the job resumes at ``step + 1`` elsewhere); it also marks the
    worker as finishing.  A no-op when the process is not supervised."""
    if not isinstance(step, int) or isinstance(step, bool) or not 0 < step < STEP_RESTORING:
        raise UsageError("ERR_PY_044", "stopped_at(step): the step must be an int in [1, 2**64 - 1), got %r" % (step,))
    library().msc_worker_stopped_at(step)


# ---- the reader -------------------------------------------------------------------------------

def _check_depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth <= 0 or depth >= 1 << 32:
        raise UsageError("ERR_PY_044", "queue_depth must be a positive int, got %r" % (depth,))
    return depth


def _check_range(offset: object, length: object) -> Tuple[int, int]:
    for what, v in (("offset", offset), ("length", length)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v >= 1 << 63:
            raise UsageError("ERR_PY_044", "a byte range's %s must be an int in [0, 2**63), got %r" % (what, v))
    if offset + length >= 1 << 63:  # type: ignore[operator]
        raise UsageError("ERR_PY_044", "byte range %d+%d ends past 2**63" % (offset, length))
    return offset, length  # type: ignore[return-value]


class UringReader(_native.ClosesOnExit):
    """Reads files and byte ranges with ``queue_depth`` reads in flight on one io_uring ring.

    ``queue_depth`` defaults to the depth the plan gave ``role`` (``MSCALE_ROLE_<ROLE>_IO_DEPTH``),
    else ``DEFAULT_QUEUE_DEPTH`` (32).  A read is split into pieces of ``chunk_bytes`` so that one
    large file keeps the queue full too.  One reader serves one thread at a time (calls are
    serialized); a process forked from the one that made it (a DataLoader worker) gets its own ring
    on first use, since a ring cannot be shared across processes.
    """

    def __init__(self, queue_depth: Optional[int] = None, role: Optional[str] = None,
                 chunk_bytes: int = 1 << 20) -> None:
        if queue_depth is None and role is not None:
            queue_depth = role_io_depth(role)
        self.queue_depth = _check_depth(DEFAULT_QUEUE_DEPTH if queue_depth is None else queue_depth)
        if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or not 0 < chunk_bytes <= 1 << 30:
            raise UsageError("ERR_PY_044", "chunk_bytes must be an int in (0, 2**30], got %r" % (chunk_bytes,))
        self.role = role
        self.chunk_bytes = chunk_bytes
        self._lib = library()
        self._lock = threading.RLock()  # _read holds it across its batches (they share the scratch buffer)
        self._handle: Optional[int] = None
        self._pid = 0
        self._closed = False
        self._scratch = bytearray()
        self._ring()

    # The ring of this process, made on first use after a fork.
    def _ring(self) -> int:
        if self._closed:
            raise UsageError("ERR_PY_044", "the reader is closed")
        if self._handle is not None and self._pid == os.getpid():
            return self._handle
        handle = ctypes.c_void_p()
        rc = self._lib.msc_worker_reader_open(self.queue_depth, self.chunk_bytes, ctypes.byref(handle))
        if rc:
            raise DataError("ERR_PY_041", self.queue_depth, _last_error(self._lib))
        self._handle, self._pid = handle.value, os.getpid()
        return self._handle  # type: ignore[return-value]

    def close(self) -> None:
        with self._lock:
            if self._handle is not None and self._pid == os.getpid():
                self._lib.msc_worker_reader_close(self._handle)
            self._handle, self._closed = None, True


    @property
    def max_in_flight(self) -> int:
        """The deepest the queue has been in this process."""
        with self._lock:
            return int(self._lib.msc_worker_reader_max_in_flight(self._ring()))

    @property
    def bytes_read(self) -> int:
        with self._lock:
            return int(self._lib.msc_worker_reader_bytes_read(self._ring()))

    def read_file(self, path: PathLike) -> bytes:
        """All of ``path`` (as much of it as there was when it was opened)."""
        return self.read_many([path])[0]

    def read_many(self, paths: Iterable[PathLike]) -> List[bytes]:
        """All of each file of ``paths``, in order, read with the queue depth in flight across them."""
        names = [_path_bytes(p) for p in paths]
        sizes = [self._size_of(n) for n in names]
        return self._read([(n, 0, s) for n, s in zip(names, sizes)], whole=True)

    def read_ranges(self, ranges: Iterable[Tuple[PathLike, int, int]]) -> List[bytes]:
        """``length`` bytes at ``offset`` of each ``(path, offset, length)``; ``ERR_PY_049`` when a
        range reaches past the end of its file."""
        items = []
        for r in ranges:
            path, offset, length = r
            offset, length = _check_range(offset, length)
            items.append((_path_bytes(path), offset, length))
        return self._read(items, whole=False)

    def read_into(self, requests: Sequence[Tuple[PathLike, int, int, int]]) -> None:
        """Reads each ``(path, offset, length, address)`` into the memory at ``address`` (the
        caller's, at least ``length`` bytes: a tensor's ``data_ptr()``), with the same checks as
        ``read_ranges``."""
        items = []
        for path, offset, length, address in requests:
            offset, length = _check_range(offset, length)
            if length and not address:
                raise UsageError("ERR_PY_044", "a read of %d bytes needs a buffer address" % length)
            items.append((_path_bytes(path), offset, length, int(address)))
        for start in range(0, len(items), _BATCH_FILES):
            self._batch(items[start:start + _BATCH_FILES], whole=False)

    @staticmethod
    def _size_of(name: bytes) -> int:
        try:
            st = os.stat(name)
        except OSError as e:
            raise DataError("ERR_PY_042", _name(name), e.strerror) from None
        if stat.S_ISDIR(st.st_mode):
            raise DataError("ERR_PY_042", _name(name), os.strerror(errno.EISDIR))
        return st.st_size

    # Reads (name, offset, length) items into fresh buffers, in batches of bounded size.
    def _read(self, items: List[Tuple[bytes, int, int]], whole: bool) -> List[bytes]:
        with self._lock:
            return self._read_locked(items, whole)

    def _read_locked(self, items: List[Tuple[bytes, int, int]], whole: bool) -> List[bytes]:
        out: List[bytes] = []
        start = 0
        while start < len(items):
            end, total = start, 0
            while end < len(items) and end - start < _BATCH_FILES and (end == start or total + items[end][2] <= _BATCH_BYTES):
                total += items[end][2]
                end += 1
            buf = self._scratch_of(total)
            holder = (ctypes.c_char * total).from_buffer(buf) if total else None  # pins buf's memory
            base = ctypes.addressof(holder) if holder is not None else 0
            batch, at = [], 0
            for name, offset, length in items[start:end]:
                batch.append((name, offset, length, base + at))
                at += length
            results = self._batch(batch, whole)
            del holder
            view = memoryview(buf)
            at = 0
            for (name, offset, length, _), got in zip(batch, results):
                out.append(bytes(view[at:at + got]))
                at += length
            view.release()
            start = end
        if len(self._scratch) > _SCRATCH_KEPT:
            self._scratch = bytearray()
        return out

    # The buffer batches are read into before they are cut into bytes. Kept between calls (up to
    # _SCRATCH_KEPT bytes): a fresh one would be page-faulted in again on every call, which costs
    # more than the reads themselves when the files are small and in the page cache.
    def _scratch_of(self, size: int) -> bytearray:
        if len(self._scratch) < size:
            self._scratch = bytearray(size)
        return self._scratch

    # One call into the library; returns the byte counts, raising the coded error of the first failure.
    def _batch(self, batch: List[Tuple[bytes, int, int, int]], whole: bool) -> List[int]:
        reads = (_Read * len(batch))()
        for r, (name, offset, length, address) in zip(reads, batch):
            r.path, r.fd, r.offset, r.length, r.buffer = name, -1, offset, length, address or None
        failed = ctypes.c_uint64(0)
        with self._lock:
            rc = self._lib.msc_worker_read_batch(self._ring(), reads, len(batch), ctypes.byref(failed))
        if rc:
            r = reads[failed.value]
            name = _name(batch[failed.value][0])
            if r.failed_open:
                raise DataError("ERR_PY_042", name, os.strerror(rc))
            raise DataError("ERR_PY_043", name, r.offset, os.strerror(rc))
        results = [int(r.result) for r in reads]
        if not whole:
            for (name, offset, length, _), got in zip(batch, results):
                if got < length:
                    try:
                        size = os.stat(name).st_size
                    except OSError:
                        size = offset + got
                    raise DataError("ERR_PY_049", offset, offset + length, _name(name), size)
        return results


# ---- phases ------------------------------------------------------------------------------------

def current_phase() -> str:
    """The phase of the contract the worker is in (``""`` between phases, or where the plan names none)."""
    buffer = ctypes.create_string_buffer(256)
    library().msc_worker_current_phase(buffer, len(buffer))
    return buffer.value.decode("utf-8", "replace")


class phase(contextlib.ContextDecorator):
    """Where the job is on its demand curve: ``with mscale.phase("compute"):`` around the code of a
    phase, or ``@mscale.phase("compute")`` on the step function that is one.  The names are the
    contract's ``phases`` (the executor lists the plan's in ``MSCALE_PHASES``); inside, the node has
    the phase's resources back, and lends what it does not keep.  Entering is a store to the control
    page (a system call only when the node must take back a loan first); leaving returns to the
    phase the worker was in.  Where no phases are named (not under mscale-exec, a plan without
    phases) it does nothing, so the same script runs anywhere; a name the plan does not have is
    ``ERR_PY_050``."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name or "," in name:
            raise UsageError("ERR_PY_044", "phase(name): a phase's name is a non-empty str, got %r" % (name,))
        self.name = name
        self._left: List[str] = []

    def __enter__(self) -> "phase":
        previous = current_phase()
        if library().msc_worker_enter_phase(self.name.encode("utf-8")) == errno.ENOENT:
            names = os.environ.get("MSCALE_PHASES", "")
            raise UsageError("ERR_PY_050", self.name, names.replace(",", ", "))
        self._left.append(previous)
        return self

    def __exit__(self, *exc) -> bool:
        library().msc_worker_enter_phase(self._left.pop().encode("utf-8"))
        return False


# ---- yielding what is lent (a borrower: a contract of class = opportunistic) -------------------

def yield_requested() -> Optional[float]:
    """A borrower's: the seconds the node gives it before it freezes it (``0.0``: the time has
    come), or ``None`` while nothing is asked.  Calling it (or ``wait_for_yield_request``,
    ``yield_now``) marks the worker as one that cooperates: only then does the node ask first, and
    a borrower that never asks is simply frozen.  Loads from the control page: cheap enough to call
    between two items of work."""
    left = int(library().msc_worker_yield_requested())
    return None if left < 0 else left / 1e9


def wait_for_yield_request(timeout: float) -> bool:
    """Blocks until the node asks this borrower to yield (``True``) or ``timeout`` seconds have
    passed (``False``): for a thread that watches while others work."""
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout >= 0:
        raise UsageError("ERR_PY_044", "wait_for_yield_request(timeout): seconds >= 0, got %r" % (timeout,))
    return bool(library().msc_worker_wait_yield_request(int(timeout * 1e9)))


def gpu_slice_update() -> Optional[Tuple[int, str]]:
    """A GPU slice hand-over this worker has not taken yet: ``(generation, slices)`` with the new
    ``MSCALE_GPU_SLICES`` value (``""``: let go of every slice; a borrower's lent GPU units are
    ``lent@<gpu>:<sms>:0:0``), or ``None``.  Move the work, then ``acknowledge_gpu_slices``."""
    buf = ctypes.create_string_buffer(4096)
    generation = int(library().msc_worker_gpu_slices_pending(buf, len(buf)))
    return (generation, buf.value.decode()) if generation > 0 else None


def acknowledge_gpu_slices(generation: int) -> None:
    """Tells the executor that the work runs on the slices of ``generation`` now (from
    ``gpu_slice_update``): the old ones are released.  A borrower told to let go of its lent GPU
    units that has not acknowledged within half its lender's bound is ended."""
    if not isinstance(generation, int) or isinstance(generation, bool) or not 0 < generation < 2**64:
        raise UsageError("ERR_PY_044", "acknowledge_gpu_slices(generation): a generation from gpu_slice_update, "
                         "got %r" % (generation,))
    library().msc_worker_acknowledge_gpu_slices(generation)


def rdma_queue_pair_update() -> Optional[Tuple[int, str]]:
    """A borrower's RDMA queue-pair hand-over not taken yet: ``(generation, queue_pairs)`` with the
    lent queue pairs in ``MSCALE_RDMA`` syntax (``lent@<device>:<port>:<queue pairs>:<max
    outstanding>``; ``""``: let go of them), or ``None``.  Connect them (or close them), then
    ``acknowledge_rdma_queue_pairs``."""
    buf = ctypes.create_string_buffer(256)
    generation = int(library().msc_worker_rdma_queue_pairs_pending(buf, len(buf)))
    return (generation, buf.value.decode()) if generation > 0 else None


def acknowledge_rdma_queue_pairs(generation: int) -> None:
    """Tells the node that the worker uses the queue pairs of ``generation`` now, or has let go of
    them (from ``rdma_queue_pair_update``).  A borrower told to let go that has not acknowledged
    within half its lender's bound is ended."""
    if not isinstance(generation, int) or isinstance(generation, bool) or not 0 < generation < 2**64:
        raise UsageError("ERR_PY_044", "acknowledge_rdma_queue_pairs(generation): a generation from "
                         "rdma_queue_pair_update, got %r" % (generation,))
    library().msc_worker_acknowledge_rdma_queue_pairs(generation)


def yield_now() -> bool:
    """If the node asked: tells it that the process may be frozen now, and returns once it is lent
    CPUs again (``True``), its work kept.  ``False`` at once when nothing is asked."""
    return bool(library().msc_worker_yield())
