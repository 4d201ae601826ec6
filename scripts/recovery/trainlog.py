"""What the recovery drivers (supervise.py, exec_faults.py) read and break: mscale-train-sim's log
and its disk snapshots."""
import os


def steps_logged(path, start):
    """Step numbers logged after byte `start` of the log."""
    try:
        with open(path) as f:
            f.seek(start)
            return [int(l.split()[1]) for l in f if l.startswith("step ")]
    except FileNotFoundError:
        return []


def newest_disk_snapshot(snap_dir):
    names = sorted(n for n in os.listdir(snap_dir) if n.startswith("snap-") and n.endswith(".msnap"))
    return os.path.join(snap_dir, names[-1]) if names else None


def corrupt_first_blob(path):
    """Flips one byte inside the first blob (model.params), which starts after the 4 KiB header."""
    with open(path, "r+b") as f:
        f.seek(4096 + 10)
        b = f.read(1)
        f.seek(4096 + 10)
        f.write(bytes([b[0] ^ 0xFF]))
