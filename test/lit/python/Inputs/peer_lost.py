"""peer_lost.py WORK: two gloo ranks of a job, each a worker using ExactResume (which installs
mscale's exit-status hook). Rank 1's process ends mid-run, as when its node is lost; rank 0 dies of
the broken all_reduce and exits 75 (peer-lost: the supervisor restarts it without counting the loss
toward a crash loop, executor/supervise/RestartPolicy.h), not 1 (a crash of its own). A RuntimeError
of its own still exits 1."""
import os
import socket
import subprocess
import sys

if len(sys.argv) == 2:
    work = sys.argv[1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = [subprocess.Popen([sys.executable, __file__, work, str(r), str(port)], stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    ends = [(p.wait(timeout=120), p.stderr.read()) for p in ranks]
    print("rank 1 (its node lost): exit %d" % ends[1][0])
    print("rank 0 (its peer gone): exit %d" % ends[0][0])
    print(ends[0][1].strip().splitlines()[-1])
    own = subprocess.run([sys.executable, __file__, work, "own", "0"], stderr=subprocess.DEVNULL)
    print("a RuntimeError of its own: exit %d" % own.returncode)
    sys.exit(0)

import torch
import torch.distributed as dist

import mscale

work, rank, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
model = torch.nn.Linear(4, 1)
state = mscale.ExactResume(model=model, directory=os.path.join(work, "rank" + rank), every=100, memory_tier=False)
if rank == "own":
    raise RuntimeError("loss is nan")
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
dist.init_process_group("gloo", rank=int(rank), world_size=2)
grad = torch.ones(4)
for step in range(1000):
    if rank == "1" and step == 5:
        os._exit(9)
    dist.all_reduce(grad)
