"""Unit tests of mscale.gds.GDSLoader on a machine without GPU Direct Storage: the io_uring path is
taken, said once with its reason, and reads what plain reads read; the choice of path follows what
the node lacks (CUDA, the cuFile library, the file's NVMe), checked with a stand-in for cuFile."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

if "MSCALE_WORKER_LIB" not in os.environ and shutil.which("mscale-exec"):
    os.environ["MSCALE_WORKER_LIB"] = os.path.join(
        os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("mscale-exec")))), "lib")

import torch

from mscale import gds, io
from mscale.errors import UsageError


def pattern(n: int, seed: int) -> bytes:
    return bytes((i * 61 + seed) & 0xFF for i in range(n))


class _FakeCuFile:
    """cuFile as far as the choice of path sees it: a driver that opened, or not."""

    def __init__(self, driver_error=None):
        self.driver_error = driver_error
        self.registered = []

    def register(self, fd):
        self.registered.append(fd)
        return None, "cuFileHandleRegister failed: cufile error 5030 (cuda 0)"


class GDSLoaderTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="mscale-gds-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.data = pattern(300000, 3)
        self.path = os.path.join(self.dir, "shard.bin")
        with open(self.path, "wb") as f:
            f.write(self.data)

    @unittest.skipIf(torch.cuda.is_available(), "this machine has CUDA")
    def test_fallback_reads_what_plain_reads_read(self) -> None:
        loader = gds.GDSLoader(self.path, queue_depth=4)
        self.assertEqual(loader.mode, gds.MODE_IO_URING)
        self.assertEqual(loader.reason, "cuda is not available")
        self.assertEqual(loader.device, torch.device("cpu"))
        whole = loader.read()
        self.assertEqual(whole.dtype, torch.uint8)
        self.assertEqual(bytes(whole.numpy()), self.data)
        ranges = [(0, 10), (299990, 10), (4096, 0), (1234, 100000)]
        for (offset, length), t in zip(ranges, loader.read_ranges(ranges)):
            self.assertEqual(bytes(t.numpy()), self.data[offset:offset + length])
        self.assertEqual(bytes(loader.read(290000).numpy()), self.data[290000:])
        self.assertEqual(loader.read(300000).numel(), 0)
        as_int32 = loader.read(0, 400).view(torch.int32)
        self.assertEqual(as_int32.numel(), 100)
        with self.assertRaises(io.DataError) as e:
            loader.read(299999, 2)
        self.assertEqual(e.exception.code, "ERR_PY_049")
        with self.assertRaises(UsageError):
            loader.read(-1, 2)
        loader.close()

    def test_the_choice_is_said_once_per_process(self) -> None:
        other = os.path.join(self.dir, "other.bin")
        with open(other, "wb") as f:
            f.write(b"x" * 10)
        code = ("import sys; from mscale.gds import GDSLoader\n"
                "for p in sys.argv[1:]: GDSLoader(p, queue_depth=8).read()\n")
        run = subprocess.run([sys.executable, "-c", code, self.path, other, self.path],
                             capture_output=True, text=True, check=True)
        lines = [l for l in run.stderr.splitlines() if l.startswith("mscale.gds:")]
        self.assertEqual(len(lines), 1, run.stderr)
        if not torch.cuda.is_available():
            self.assertEqual(lines[0], "mscale.gds: reading through io_uring (queue depth 8) into host memory: "
                                       "cuda is not available")
        # With logging configured the line goes to the 'mscale.gds' logger instead.
        code = ("import logging, sys; logging.basicConfig(level=logging.INFO, format='%(name)s %(message)s')\n"
                "from mscale.gds import GDSLoader\n"
                "for p in sys.argv[1:]: GDSLoader(p).read()\n")
        run = subprocess.run([sys.executable, "-c", code, self.path, other],
                             capture_output=True, text=True, check=True)
        self.assertEqual(len([l for l in run.stderr.splitlines() if l.startswith("mscale.gds reading through")]), 1,
                         run.stderr)

    def test_the_path_follows_what_the_node_lacks(self) -> None:
        # CUDA is pretended; the loader is only constructed (no tensor goes to a GPU).
        disk = gds.block_device_of(self.path)
        with mock.patch.object(torch.cuda, "is_available", return_value=True):
            with mock.patch.object(gds._CuFile, "load", return_value=(None, "the cuFile library is not found (x)")):
                loader = gds.GDSLoader(self.path, device="cuda:0")
                self.assertEqual((loader.mode, loader.reason), ("io_uring", "the cuFile library is not found (x)"))
                loader = gds.GDSLoader(self.path, device="cpu")
                self.assertEqual(loader.reason, "the tensors go to 'cpu', not to a gpu")
            fake = _FakeCuFile(driver_error="cuFileDriverOpen failed: cufile error 5011 (cuda 0)")
            with mock.patch.object(gds._CuFile, "load", return_value=(fake, "")):
                self.assertEqual(gds.GDSLoader(self.path, device="cuda:0").reason, fake.driver_error)
                with self.assertRaises(gds.GDSError) as e:
                    gds.GDSLoader(self.path, device="cuda:0", require_gds=True)
                self.assertEqual(str(e.exception), "error[ERR_PY_048]: gpu direct storage is required for '%s' but "
                                                   "cannot be used: %s" % (self.path, fake.driver_error))
            fake = _FakeCuFile()
            with mock.patch.object(gds._CuFile, "load", return_value=(fake, "")):
                where = "'%s'" % disk if disk else "no block device"
                loader = gds.GDSLoader(self.path, "nvme-not-here", device="cuda:0")
                self.assertEqual(loader.reason, "the file is on %s, not on 'nvme-not-here'" % where)
                self.assertEqual(fake.registered, [])
                if disk:  # on the named device the file gets as far as cuFile's registration
                    loader = gds.GDSLoader(self.path, "/dev/" + disk, device="cuda:0")
                    self.assertIn(loader.reason, ("cuFileHandleRegister failed: cufile error 5030 (cuda 0)",
                                                  "the file cannot be opened with O_DIRECT: Invalid argument"))

    def test_block_device_of(self) -> None:
        disk = gds.block_device_of(self.path)
        if disk is not None:
            self.assertTrue(os.path.exists("/sys/block/" + disk), disk)
        self.assertIsNone(gds.block_device_of("/proc/self/status"))

    def test_a_missing_file_is_a_coded_error(self) -> None:
        with self.assertRaises(io.DataError) as e:
            gds.GDSLoader(os.path.join(self.dir, "missing.bin"))
        self.assertEqual(e.exception.code, "ERR_PY_042")


if __name__ == "__main__":
    unittest.main()
