"""A rank for test/lit/exec/nproc.test: reports what mscale-exec gave it, then fails on cue.

    nproc_worker.py OUT MODE

writes OUT/rank-<RANK>.attempt-<MSCALE_ATTEMPT> (its rank environment, then the memfds it holds),
then, by MODE:
    complete  beats steps 1..3 on its control page and exits 0
    kill1     first attempt: rank 1 reaches step 37 and kills itself with SIGKILL, rank 0 beats
              until it is stopped; later attempts complete
    hang1     first attempt: rank 1 reaches step 5 and stops beating (hung), rank 0 beats until it
              is stopped; later attempts complete
    exit1     rank 1 exits 7, rank 0 beats until it is stopped (every attempt)
"""
import mmap
import os
import signal
import struct
import sys
import time

out, mode = sys.argv[1], sys.argv[2]
env = os.environ
rank, attempt = int(env["RANK"]), int(env["MSCALE_ATTEMPT"])


def memfds():
    # The memfds this rank inherited: its own control page and memory tier, never another rank's.
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith("/memfd:"):
            names.append(target[len("/memfd:"):].replace(" (deleted)", ""))
    return ",".join(sorted(names))


with open(os.path.join(out, "rank-%d.attempt-%d" % (rank, attempt)), "w") as f:
    f.write("rank=%s local_rank=%s world=%s local_world=%s mscale_rank=%s mscale_world=%s master=%s:%s "
            "attempt=%d resume=%s plan=%s\n" % (
                env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"], env["MSCALE_RANK"],
                env["MSCALE_WORLD_SIZE"], env["MASTER_ADDR"], env["MASTER_PORT"], attempt,
                env.get("MSCALE_RESUME", "-"), env.get("MSCALE_PLAN", "-")))
    f.write("memfds=%s\n" % memfds())
    f.write("port=%s\n" % env["MASTER_PORT"])
print("rank %d of %s: MASTER_PORT %s, attempt %d" % (rank, env["WORLD_SIZE"], env["MASTER_PORT"], attempt),
      flush=True)

page = mmap.mmap(int(env["MSCALE_CONTROL_FD"]), 4096)


def beat(step):
    # worker/WorkerApi.h ControlPage: magic, beats, step, as little-endian 64-bit words.
    struct.pack_into("<Q", page, 16, step)
    struct.pack_into("<Q", page, 8, struct.unpack_from("<Q", page, 8)[0] + 1)


def beat_until_stopped():
    step = 0
    while True:
        step += 1
        beat(step)
        time.sleep(0.02)


if mode == "exit1":
    if rank == 1:
        beat(2)
        sys.exit(7)
    beat_until_stopped()
if attempt == 0 and mode in ("kill1", "hang1"):
    if rank == 0:
        beat_until_stopped()
    for _ in range(10):  # a few beats at the step the fault line must name, then the fault
        beat(37 if mode == "kill1" else 5)
        time.sleep(0.02)
    if mode == "kill1":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # hung: alive, no beats
for step in (1, 2, 3):
    beat(step)
    time.sleep(0.02)
