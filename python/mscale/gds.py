"""``GDSLoader``: a file (or byte ranges of it) into a tensor, through GPU Direct Storage when the
node has it, through the worker runtime's io_uring reader otherwise.

GPU Direct Storage (cuFile, ``libcufile.so.0`` loaded at run time) DMAs from the NVMe straight into
GPU memory, skipping the host bounce.  It needs CUDA, the cuFile library and driver, and a file on an
NVMe that GDS serves -- the contract's ``gds_device``.  When any of it is missing the loader reads
with io_uring (``mscale.io.UringReader``, the role's queue depth) into page-locked host memory and
copies to the GPU, or into plain memory on a machine without CUDA.  Which path it took, and why, is
said once per process (the ``mscale.gds`` logger, or stderr when logging is not configured).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from typing import Iterable, List, Optional, Sequence, Set, Tuple, Union

import torch

from mscale import _native
from mscale.errors import MScaleError, UsageError
from mscale.io import DataError, UringReader

__all__ = ["GDSLoader", "GDSError", "MODE_GDS", "MODE_IO_URING"]

MODE_GDS = "gds"
MODE_IO_URING = "io_uring"
CUFILE_NAMES = ("libcufile.so.0", "libcufile.so")

_log = logging.getLogger("mscale.gds")
_said: Set[Tuple[str, str]] = set()
_said_lock = threading.Lock()


class GDSError(MScaleError):
    """GPU Direct Storage was required and cannot be used."""


def _say_once(mode: str, reason: str, text: str) -> None:
    with _said_lock:
        if (mode, reason) in _said:
            return
        _said.add((mode, reason))
    if logging.getLogger("mscale").hasHandlers():
        _log.info(text)
    else:  # unconfigured logging would drop an info line: the choice must be visible
        print("mscale.gds: " + text, file=sys.stderr, flush=True)


# ---- cuFile --------------------------------------------------------------------------------------

class _CuFileError(ctypes.Structure):  # CUfileError_t: the cuFile status and the CUDA driver's
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class _HandleUnion(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("handle", ctypes.c_void_p)]


class _CuFileDescr(ctypes.Structure):  # CUfileDescr_t
    _fields_ = [("type", ctypes.c_int), ("handle", _HandleUnion), ("fs_ops", ctypes.c_void_p)]


_HANDLE_TYPE_OPAQUE_FD = 1


class _CuFile:
    """The few cuFile calls the loader makes.  The driver is opened once per process and stays
    open (closing it while another loader reads would break that loader)."""

    _instance: Optional["_CuFile"] = None
    _lock = threading.Lock()

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        p, size_t, ssize_t, off_t = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_ssize_t, ctypes.c_int64
        lib.cuFileDriverOpen.restype, lib.cuFileDriverOpen.argtypes = _CuFileError, []
        lib.cuFileHandleRegister.restype = _CuFileError
        lib.cuFileHandleRegister.argtypes = [ctypes.POINTER(p), ctypes.POINTER(_CuFileDescr)]
        lib.cuFileHandleDeregister.restype, lib.cuFileHandleDeregister.argtypes = None, [p]
        lib.cuFileBufRegister.restype, lib.cuFileBufRegister.argtypes = _CuFileError, [p, size_t, ctypes.c_int]
        lib.cuFileBufDeregister.restype, lib.cuFileBufDeregister.argtypes = _CuFileError, [p]
        lib.cuFileRead.restype, lib.cuFileRead.argtypes = ssize_t, [p, p, size_t, off_t, off_t]
        self.driver_error: Optional[str] = None
        status = lib.cuFileDriverOpen()
        if status.err != 0:
            self.driver_error = "cuFileDriverOpen failed: cufile error %d (cuda %d)" % (status.err, status.cu_err)

    @classmethod
    def load(cls) -> Tuple[Optional["_CuFile"], str]:
        """The process's cuFile, or None and why not."""
        with cls._lock:
            if cls._instance is not None:
                return cls._instance, ""
            errors = []
            for name in CUFILE_NAMES:
                try:
                    lib = ctypes.CDLL(name, use_errno=True)
                except OSError as e:
                    errors.append(str(e))
                    continue
                try:
                    cls._instance = _CuFile(lib)
                except AttributeError as e:
                    errors.append("'%s' lacks a cuFile call: %s" % (name, e))
                    continue
                return cls._instance, ""
            return None, "the cuFile library is not found (%s)" % ", ".join(CUFILE_NAMES)

    def register(self, fd: int) -> Tuple[Optional[int], str]:
        descr = _CuFileDescr()
        descr.type = _HANDLE_TYPE_OPAQUE_FD
        descr.handle.fd = fd
        handle = ctypes.c_void_p()
        status = self.lib.cuFileHandleRegister(ctypes.byref(handle), ctypes.byref(descr))
        if status.err != 0:
            return None, "cuFileHandleRegister failed: cufile error %d (cuda %d)" % (status.err, status.cu_err)
        return handle.value, ""

    def deregister(self, handle: int) -> None:
        self.lib.cuFileHandleDeregister(handle)

    def read_into(self, handle: int, address: int, size: int, file_offset: int) -> Tuple[int, str]:
        """Reads until ``size`` bytes are in or the file ends: the count, or -1 and why."""
        # Registering the buffer lets cuFile DMA into it without its own bounce buffers; a buffer
        # it cannot register (too many registrations) is still read, only slower.
        registered = self.lib.cuFileBufRegister(address, size, 0).err == 0
        try:
            done = 0
            while done < size:
                n = self.lib.cuFileRead(handle, address, size - done, file_offset + done, done)
                if n < 0:
                    err = ctypes.get_errno() if n == -1 else 0
                    return -1, ("cuFileRead: %s" % os.strerror(err)) if err else "cuFileRead: cufile error %d" % -n
                if n == 0:
                    break
                done += n
            return done, ""
        finally:
            if registered:
                self.lib.cuFileBufDeregister(address)


# ---- where a file lives --------------------------------------------------------------------------

def block_device_of(path: Union[str, "os.PathLike[str]"]) -> Optional[str]:
    """The disk (``nvme0n1``, not the partition ``nvme0n1p2``) that holds ``path``, or None when the
    file system is not on one block device (tmpfs, overlay, NFS)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:
        return None
    sys_dev = "/sys/dev/block/%d:%d" % (major, minor)
    if not os.path.exists(sys_dev):
        return None
    real = os.path.realpath(sys_dev)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


def _plain_device(name: Optional[str]) -> Optional[str]:
    return name[5:] if name and name.startswith("/dev/") else name


# ---- the loader --------------------------------------------------------------------------------

def _check_range(offset: object, length: object) -> None:
    for what, v in (("offset", offset), ("length", length)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise UsageError("ERR_PY_044", "a byte range's %s must be a non-negative int, got %r" % (what, v))


class GDSLoader(_native.ClosesOnExit):
    """Reads ``path`` (all of it, or byte ranges) into uint8 tensors.

    ``gds_device`` is the NVMe the contract put the data on (``None``: any device); GDS is used only
    for files on it.  ``device`` is where the tensors go: by default the current CUDA device when
    CUDA is available, else the CPU.  ``role`` and ``queue_depth`` set the io_uring path's depth
    (see ``mscale.io.UringReader``).  ``require_gds=True`` makes a missing GDS path an error
    (``ERR_PY_048``) instead of a fallback.  After construction ``mode`` is ``"gds"`` or
    ``"io_uring"`` and ``reason`` says why.  Use ``tensor.view(dtype)`` for other element types.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], gds_device: Optional[str] = "nvme0n1", *,
                 device: Union[str, torch.device, None] = None, role: Optional[str] = None,
                 queue_depth: Optional[int] = None, require_gds: bool = False) -> None:
        self.path = os.fspath(path)
        self.gds_device = _plain_device(gds_device)
        self.cuda = torch.cuda.is_available()
        self.device = torch.device(device if device is not None else ("cuda" if self.cuda else "cpu"))
        if self.device.type == "cuda" and self.device.index is None and self.cuda:
            self.device = torch.device("cuda", torch.cuda.current_device())
        try:
            self.size = os.stat(self.path).st_size
        except OSError as e:
            raise DataError("ERR_PY_042", self.path, e.strerror) from None
        self._fd = -1
        self._handle: Optional[int] = None
        self._cufile: Optional[_CuFile] = None
        self._reader: Optional[UringReader] = None
        self.mode, self.reason = self._choose()
        if self.mode != MODE_GDS:
            if require_gds:
                raise GDSError("ERR_PY_048", self.path, self.reason)
            self._reader = UringReader(queue_depth=queue_depth, role=role)
            target = "page-locked host memory" if self.cuda else "host memory"
            _say_once(self.mode, self.reason, "reading through io_uring (queue depth %d) into %s: %s"
                      % (self._reader.queue_depth, target, self.reason))
        else:
            _say_once(self.mode, self.reason, "reading through gpu direct storage: %s" % self.reason)

    # GDS when everything it needs is here; else the first thing missing is the reason.
    def _choose(self) -> Tuple[str, str]:
        if not self.cuda:
            return MODE_IO_URING, "cuda is not available"
        if self.device.type != "cuda":
            return MODE_IO_URING, "the tensors go to '%s', not to a gpu" % self.device
        cufile, why = _CuFile.load()
        if cufile is None:
            return MODE_IO_URING, why
        if cufile.driver_error:
            return MODE_IO_URING, cufile.driver_error
        disk = block_device_of(self.path)
        if self.gds_device is not None and disk != self.gds_device:
            where = "'%s'" % disk if disk else "no block device"
            return MODE_IO_URING, "the file is on %s, not on '%s'" % (where, self.gds_device)
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
        except OSError as e:
            return MODE_IO_URING, "the file cannot be opened with O_DIRECT: %s" % e.strerror
        handle, why = cufile.register(fd)
        if handle is None:
            os.close(fd)
            return MODE_IO_URING, why
        self._fd, self._handle, self._cufile = fd, handle, cufile
        return MODE_GDS, "cuFile on '%s' into %s memory" % (disk, self.device)

    def close(self) -> None:
        if self._handle is not None and self._cufile is not None:
            self._cufile.deregister(self._handle)
            self._handle = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._reader is not None:
            self._reader.close()


    def read(self, offset: int = 0, length: Optional[int] = None) -> torch.Tensor:
        """``length`` bytes at ``offset`` (default: to the end of the file)."""
        if length is None:
            _check_range(offset, 0)
            length = max(self.size - offset, 0)
        return self.read_ranges([(offset, length)])[0]

    def read_ranges(self, ranges: Iterable[Tuple[int, int]]) -> List[torch.Tensor]:
        """One tensor per ``(offset, length)``, read together (the io_uring path keeps its queue
        depth in flight across them); ``ERR_PY_049`` when a range reaches past the end."""
        items = []
        for offset, length in ranges:
            _check_range(offset, length)
            if offset + length > self.size:
                raise DataError("ERR_PY_049", offset, offset + length, self.path, self.size)
            items.append((offset, length))
        if self.mode == MODE_GDS:
            return [self._read_gds(offset, length) for offset, length in items]
        return self._read_io_uring(items)

    def _read_gds(self, offset: int, length: int) -> torch.Tensor:
        assert self._cufile is not None and self._handle is not None
        out = torch.empty(length, dtype=torch.uint8, device=self.device)
        if length == 0:
            return out
        # cuFile's DMA is not ordered with the stream: memory the caching allocator hands out may
        # still be read by kernels queued before it was freed.
        torch.cuda.current_stream(self.device).synchronize()
        got, why = self._cufile.read_into(self._handle, out.data_ptr(), length, offset)
        if got < 0:
            raise DataError("ERR_PY_043", self.path, offset, why)
        if got < length:  # the file shrank since it was opened
            raise DataError("ERR_PY_049", offset, offset + length, self.path, offset + got)
        return out

    def _read_io_uring(self, items: Sequence[Tuple[int, int]]) -> List[torch.Tensor]:
        assert self._reader is not None
        # Page-locked when CUDA is here: the copy to the GPU is then a DMA that can overlap compute.
        hosts = [torch.empty(length, dtype=torch.uint8, pin_memory=self.cuda) for _, length in items]
        self._reader.read_into([(self.path, offset, length, host.data_ptr())
                                for (offset, length), host in zip(items, hosts)])
        if self.device.type == "cpu":
            return hosts
        return [host.to(self.device, non_blocking=True) for host in hosts]
