"""Thread placement of data loader processes: a torch DataLoader with num_workers=2 and
``role_worker_init("image_loader")`` must run every thread of each loader process on the role's
CPUs (read back from /proc/<pid>/task/<tid>/status), named after the role, while the training
process keeps its own CPUs.

``test_placement.py`` runs the unit tests under an environment that gives the role one CPU;
``test_placement.py --report`` prints what it finds, for a run under ``mscale-exec`` (placement-exec.test).
"""

import os
import shutil
import sys
import tempfile
import threading
import time
import unittest
from typing import Dict, List, Tuple

if "MSCALE_WORKER_LIB" not in os.environ and shutil.which("mscale-exec"):
    os.environ["MSCALE_WORKER_LIB"] = os.path.join(
        os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("mscale-exec")))), "lib")

import torch
from torch.utils.data import DataLoader, Dataset

from mscale import io

ROLE = "image_loader"


def allowed(pid: int, tid: int) -> str:
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return ""


def threads_of(pid: int) -> Dict[int, str]:
    return {int(t): allowed(pid, int(t)) for t in os.listdir("/proc/%d/task" % pid)}


def _idle() -> None:
    while True:
        time.sleep(3600)


def init_with_a_thread(worker_id: int) -> None:
    # A thread that exists before the pinning: pin_to_role must move it too, not only new ones.
    threading.Thread(target=_idle, daemon=True).start()
    io.role_worker_init(ROLE)(worker_id)


class Files(Dataset):
    """Sample i is file i, read through a reader made in the training process (each loader
    process gets its own ring), with where the loader process ran."""

    def __init__(self, paths: List[str]) -> None:
        self.paths = paths
        self.reader = io.UringReader(role=ROLE)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        data = self.reader.read_file(self.paths[i])
        pid = os.getpid()
        with open("/proc/%d/comm" % pid) as f:
            name = f.read().strip()
        return {"pid": pid, "name": name, "threads": sorted(threads_of(pid).items()), "data": data,
                "depth": self.reader.queue_depth}


def run_loader(directory: str) -> Tuple[List[dict], List[bytes]]:
    paths = []
    for i in range(16):
        paths.append(os.path.join(directory, "sample%02d" % i))
        with open(paths[-1], "wb") as f:
            f.write(bytes([i]) * (1000 + i))
    loader = DataLoader(Files(paths), batch_size=None, num_workers=2, worker_init_fn=init_with_a_thread)
    samples = list(loader)
    expected = []
    for p in paths:
        with open(p, "rb") as f:
            expected.append(f.read())
    return samples, expected


class PlacementTest(unittest.TestCase):
    def test_loader_processes_run_on_the_role_cpus(self) -> None:
        mine = sorted(os.sched_getaffinity(0))
        cpu = mine[-1]
        os.environ["MSCALE_ROLE_IMAGE_LOADER_CPUS"] = str(cpu)
        self.addCleanup(os.environ.pop, "MSCALE_ROLE_IMAGE_LOADER_CPUS", None)
        before = threads_of(os.getpid())
        with tempfile.TemporaryDirectory() as d:
            samples, expected = run_loader(d)
        self.assertEqual([s["data"] for s in samples], expected)
        by_pid = {s["pid"]: s for s in samples}
        self.assertEqual(len(by_pid), 2)
        self.assertNotIn(os.getpid(), by_pid)
        for s in by_pid.values():
            self.assertEqual(s["name"], ROLE)
            self.assertGreaterEqual(len(s["threads"]), 2)  # the main thread and the one started before pinning
            self.assertEqual({cpus for _, cpus in s["threads"]}, {str(cpu)})
        # The training process keeps its CPUs.
        self.assertEqual(sorted(os.sched_getaffinity(0)), mine)
        self.assertEqual(threads_of(os.getpid()).get(os.getpid()), before[os.getpid()])


def report() -> int:
    """What a run under mscale-exec finds, one line per process."""
    print("main cpus %s" % allowed(os.getpid(), os.getpid()))
    with tempfile.TemporaryDirectory() as d:
        samples, expected = run_loader(d)
    seen = {}
    for s in samples:
        seen[s["pid"]] = s
    for pid in sorted(seen):
        s = seen[pid]
        cpus = sorted({c for _, c in s["threads"]})
        print("loader name %s threads %d cpus %s" % (s["name"], len(s["threads"]), ",".join(cpus)))
    print("reader depth %d %s" % (samples[0]["depth"], "ok" if [s["data"] for s in samples] == expected else "DIFFERENT"))
    print("supervised %s" % ("yes" if io.supervised() else "no"), flush=True)
    io.heartbeat(1)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--report"]:
        # The first beat starts the supervisor's watch (a beat per 200 ms): exit right after it
        # instead of through torch's slow interpreter teardown, which would read as a hung worker.
        status = report()
        os._exit(status)
    unittest.main()
