"""Unit tests of mscale.io: the io_uring reader over libmscale_worker.so.

Reads must equal plain reads (whole files, batches of many files, byte ranges, empty files), keep
the queue depth in flight, take the role's depth from the executor's variable, fail with coded
errors, survive a fork, and beat on a control page laid out by the worker runtime.
"""

import ctypes
import mmap
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

# Under lit the tools of the build are first on PATH; the library is in lib/ beside them.
if "MSCALE_WORKER_LIB" not in os.environ and shutil.which("mscale-exec"):
    os.environ["MSCALE_WORKER_LIB"] = os.path.join(
        os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("mscale-exec")))), "lib")

import torch

from mscale import io
from mscale.errors import MScaleError, UsageError


def pattern(n: int, seed: int) -> bytes:
    return bytes((i * 131 + seed * 7 + i // 251) & 0xFF for i in range(n))


class ReaderTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="mscale-io-")
        self.addCleanup(shutil.rmtree, self.dir)

    def write(self, name: str, data: bytes) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def plain(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def test_read_file_equals_a_plain_read(self) -> None:
        reader = io.UringReader(queue_depth=4, chunk_bytes=65536)
        for size in (0, 1, 4095, 4096, 65536, 3 * 65536 + 17, (1 << 20) + 3):
            path = self.write("f%d" % size, pattern(size, size))
            self.assertEqual(reader.read_file(path), self.plain(path), size)
        # One file of 17 pieces of 64 KiB fills the queue on its own.
        self.assertEqual(reader.max_in_flight, 4)

    def test_read_many_equals_plain_reads_at_the_queue_depth(self) -> None:
        paths = [self.write("s%03d" % i, pattern(0 if i % 50 == 7 else 100 + 37 * i, i)) for i in range(200)]
        reader = io.UringReader(queue_depth=8)
        got = reader.read_many(paths)
        self.assertEqual(len(got), 200)
        for path, data in zip(paths, got):
            self.assertIsInstance(data, bytes)
            self.assertEqual(data, self.plain(path), path)
        self.assertEqual(reader.max_in_flight, 8)
        self.assertEqual(reader.bytes_read, sum(len(d) for d in got))
        self.assertEqual(reader.read_many([]), [])

    def test_read_many_across_batches(self) -> None:
        # Batches are bounded in bytes: a list larger than one batch still comes back whole, in order.
        old = io._BATCH_BYTES
        io._BATCH_BYTES = 10000
        self.addCleanup(setattr, io, "_BATCH_BYTES", old)
        paths = [self.write("b%d" % i, pattern(3000 + i, i)) for i in range(12)] + [self.write("big", pattern(25000, 1))]
        self.assertEqual(io.UringReader(queue_depth=2).read_many(paths), [self.plain(p) for p in paths])

    def test_read_ranges_and_read_into(self) -> None:
        data = pattern(100000, 5)
        path = self.write("r", data)
        reader = io.UringReader(queue_depth=3, chunk_bytes=4096)
        ranges = [(path, 0, 10), (path, 99990, 10), (path, 5000, 0), (path, 12345, 54321)]
        self.assertEqual(reader.read_ranges(ranges), [data[o:o + n] for _, o, n in ranges])
        out = torch.zeros(1000, dtype=torch.uint8)
        reader.read_into([(path, 777, 1000, out.data_ptr())])
        self.assertEqual(bytes(out.numpy()), data[777:1777])

    def test_errors_are_coded(self) -> None:
        reader = io.UringReader(queue_depth=2)
        good = self.write("good", b"abc")
        with self.assertRaises(io.DataError) as e:
            reader.read_many([good, os.path.join(self.dir, "missing")])
        self.assertEqual(e.exception.code, "ERR_PY_042")
        self.assertIn("No such file or directory", str(e.exception))
        with self.assertRaises(io.DataError) as e:
            reader.read_file(self.dir)
        self.assertEqual(e.exception.code, "ERR_PY_042")
        with self.assertRaises(io.DataError) as e:
            reader.read_ranges([(self.dir, 0, 8)])
        self.assertEqual(e.exception.code, "ERR_PY_043")
        with self.assertRaises(io.DataError) as e:
            reader.read_ranges([(good, 1, 3)])
        self.assertEqual(str(e.exception), "error[ERR_PY_049]: byte range [1, 4) of '%s' reaches past its end (3 bytes)" % good)
        for bad in (0, -1, 2.0, True, "8"):
            with self.assertRaises(UsageError):
                io.UringReader(queue_depth=bad)
        with self.assertRaises(UsageError) as e:
            reader.read_ranges([(good, -1, 2)])
        self.assertIsInstance(e.exception, TypeError)
        with self.assertRaises(io.DataError) as e:
            io.UringReader(queue_depth=1 << 20)
        self.assertEqual(e.exception.code, "ERR_PY_041")
        reader.close()
        with self.assertRaises(UsageError) as e:
            reader.read_file(good)
        self.assertIn("the reader is closed", str(e.exception))
        # The reader still works after a failed batch.
        self.assertEqual(io.UringReader(queue_depth=2).read_file(good), b"abc")

    def test_queue_depth_from_the_role(self) -> None:
        var = "MSCALE_ROLE_IO_TEST_ROLE_IO_DEPTH"
        self.addCleanup(os.environ.pop, var, None)
        os.environ.pop(var, None)
        self.assertIsNone(io.role_io_depth("io-test.role"))
        self.assertEqual(io.UringReader(role="io-test.role").queue_depth, io.DEFAULT_QUEUE_DEPTH)
        os.environ[var] = "12"
        self.assertEqual(io.UringReader(role="io-test.role").queue_depth, 12)
        self.assertEqual(io.UringReader(queue_depth=3, role="io-test.role").queue_depth, 3)
        os.environ[var] = "deep"
        with self.assertRaises(io.DataError) as e:
            io.UringReader(role="io-test.role")
        self.assertEqual(str(e.exception), "error[ERR_PY_047]: invalid io depth for role 'io-test.role': "
                                           "MSCALE_ROLE_IO_TEST_ROLE_IO_DEPTH='deep' is not a positive number")

    def test_role_cpus(self) -> None:
        var = "MSCALE_ROLE_IO_TEST_CPUS"
        self.addCleanup(os.environ.pop, var, None)
        os.environ.pop(var, None)
        self.assertEqual(io.role_cpus("io_test"), [])
        os.environ[var] = "0-2,5"
        self.assertEqual(io.role_cpus("io_test"), [0, 1, 2, 5])
        os.environ[var] = "x"
        with self.assertRaises(io.PlacementError) as e:
            io.role_cpus("io_test")
        self.assertEqual(e.exception.code, "ERR_PY_045")

    def test_a_forked_child_gets_its_own_ring(self) -> None:
        path = self.write("fork", pattern(50000, 2))
        reader = io.UringReader(queue_depth=4)
        self.assertEqual(reader.read_file(path), self.plain(path))
        pid = os.fork()
        if pid == 0:  # the child: exit status 0 only when its read is right
            ok = reader.read_file(path) == pattern(50000, 2)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual(reader.read_file(path), self.plain(path))

    def test_heartbeat_without_supervisor_is_a_no_op(self) -> None:
        if "MSCALE_CONTROL_FD" in os.environ:
            self.skipTest("runs under mscale-exec")
        self.assertFalse(io.supervised())
        io.heartbeat(5)
        io.heartbeat(None)
        with self.assertRaises(UsageError):
            io.heartbeat(-1)

    def test_heartbeat_on_a_control_page(self) -> None:
        # The page as mscale-exec makes it: magic "MSCCTRL1", then beats and step (u64 each). The
        # library maps it once per process, so the beating happens in a child.
        fd = os.memfd_create("mscale-io-test", 0)
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 4096)
        page = mmap.mmap(fd, 4096)
        self.addCleanup(page.close)
        page[0:8] = struct.pack("<Q", 0x314C52544343534D)
        env = dict(os.environ, MSCALE_CONTROL_FD=str(fd))
        code = "from mscale import io; assert io.supervised(); io.heartbeat(None); io.heartbeat(41); io.heartbeat(42)"
        subprocess.run([sys.executable, "-c", code], env=env, pass_fds=[fd], check=True)
        beats, step = struct.unpack("<QQ", page[8:24])
        self.assertEqual((beats, step), (3, 42))

    def test_a_missing_library_is_a_coded_error(self) -> None:
        env = dict(os.environ, MSCALE_WORKER_LIB=os.path.join(self.dir, "nowhere", "libmscale_worker.so.1"))
        code = ("from mscale import io\ntry:\n    io.UringReader()\nexcept io.DataError as e:\n    print(e)\n")
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
        self.assertTrue(out.startswith("error[ERR_PY_040]: cannot load the worker runtime's library: MSCALE_WORKER_LIB="), out)


if __name__ == "__main__":
    unittest.main()
