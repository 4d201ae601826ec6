"""The installed package at work: its tools, both C libraries, a snapshot round trip, a contract check."""
import os
import shutil
import subprocess
import sys

import torch

import mscale
from mscale import _contract_tools, _snapshot, io as mio

prefix = sys.argv[1]
assert mscale.__file__.startswith(prefix), mscale.__file__
print("tools from " + os.path.dirname(_contract_tools.find_tool("mscalec")))
print("snapshot library: ABI %d" % _snapshot.library().msc_snap_abi_version())
print("worker library: ABI %d" % mio.library().msc_worker_abi_version())
model = torch.nn.Linear(2, 2)
state = mscale.ExactResume(model=model, directory="ckpt", every=3, memory_tier=False)
for step in range(1, 4):
    state.step_done(step)
state.close()
print("resumed at step %d" % mscale.ExactResume(model=model, directory="ckpt", memory_tier=False).restore())
shutil.rmtree("ckpt")
with open("installed.msc", "w") as f:
    f.write('contract installed { io_topology { data { cpu_cores = [0]; } } }\n')
out = subprocess.run([sys.executable, "-m", "mscale", "check", "installed.msc"], capture_output=True, text=True)
print(out.stdout.strip().replace("mscale: ", "") or out.stderr)
