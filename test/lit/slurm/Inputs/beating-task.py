# A Slurm task using the mscale package as under mscale-exec: it maps the role's hugepage pool and
# beats on its control page, both taken from the node agent by the plugin. `status SOCKET`: then asks
# the agent what it saw; `hang`: then falls silent, as a hung training step does.
import mmap
import os
import subprocess
import sys
import time

from mscale import io

mode = sys.argv[1]
for name in ("MSCALE_CONTROL_FD", "MSCALE_POOL_DATA_FD"):
    fd = int(os.environ[name])
    print("%s: %s" % (name, os.readlink("/proc/self/fd/%d" % fd)), flush=True)
pool = mmap.mmap(int(os.environ["MSCALE_POOL_DATA_FD"]), int(os.environ["MSCALE_POOL_DATA_BYTES"]))
pool[:] = b"\x5a" * len(pool)  # every page of the pool is there to write
print("pool: wrote %d bytes" % len(pool), flush=True)
for step in range(1, 4):
    io.heartbeat(step)
if mode == "status":
    io.finishing()  # beats stop here: the agent gives a finishing task its exit grace, not 300 ms
    subprocess.run(["mscale-cli", "contract", "status", "lit_slurm_pages", "--socket", sys.argv[2]], check=True)
else:
    print("silent after step 7", flush=True)  # before the beat: the agent may kill it 300 ms after
    io.heartbeat(7)
    time.sleep(60)
    print("FAIL: still running after 60 s")
