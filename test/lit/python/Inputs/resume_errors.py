"""Bad input to the exact-resume state, one case per run: each prints the coded error as the package
prints it (or the log lines of a case that recovers).  Usage: resume_errors.py CASE WORKDIR"""
import os
import subprocess
import sys

import torch

import mscale
from mscale.errors import MScaleError

case, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)


def state(directory=None, **kwargs):
    torch.manual_seed(0)
    model = kwargs.pop("model", None) or torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return mscale.ExactResume(model=model, optimizer=optimizer, directory=directory or os.path.join(work, "ckpt"),
                              memory_tier=False, background_disk=False, **kwargs), model, optimizer


def train(resume, model, optimizer, steps):
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        resume.step_done(step)


def corrupt(path):
    with open(path, "r+b") as f:  # a byte inside the first blob (blobs start at 4096)
        f.seek(4096 + 7)
        byte = f.read(1)
        f.seek(4096 + 7)
        f.write(bytes([byte[0] ^ 0xFF]))


try:
    if case == "no-library":  # ERR_PY_020
        os.environ["MSCALE_SNAPSHOT_LIB"] = os.path.join(work, "libmscale_snapshot.so")
        state()
    elif case == "not-writable":  # ERR_PY_021: a "directory" below a regular file (root ignores modes)
        open(os.path.join(work, "file"), "w").close()
        state(os.path.join(work, "file", "ckpt"))
    elif case == "restart-without-snapshot":  # ERR_PY_022
        os.environ["MSCALE_RESUME"] = "1"
        state()[0].restore()
    elif case in ("corrupt-newest", "all-corrupt"):  # a skipped snapshot is said; all bad is ERR_PY_022
        resume, model, optimizer = state(every=5)
        train(resume, model, optimizer, 10)
        resume.close()
        ckpt = os.path.join(work, "ckpt")
        files = sorted(os.listdir(ckpt))
        for name in files[-1:] if case == "corrupt-newest" else files:
            corrupt(os.path.join(ckpt, name))
        print("next step", state(every=5)[0].restore(required=True))
    elif case == "wrong-model":  # ERR_PY_023
        resume, model, optimizer = state(every=5)
        train(resume, model, optimizer, 5)
        resume.close()
        state(model=torch.nn.Linear(4, 3))[0].restore()
    elif case == "bad-arguments":  # ERR_PY_024, several
        for kwargs in ({"optimizer": 3}, {"every": 0}, {"directory": ""}):
            try:
                if "optimizer" in kwargs:
                    mscale.ExactResume(optimizer=3, directory=work)
                elif "every" in kwargs:
                    mscale.ExactResume(every=0, directory=work)
                else:
                    os.environ.pop("MSCALE_SNAPSHOT_DIR", None)
                    mscale.ExactResume(directory="")
            except MScaleError as e:
                print(e)
    elif case == "save-fails":  # ERR_PY_025: the directory vanished under a running job
        resume, model, optimizer = state(every=2)
        subprocess.run(["rm", "-rf", os.path.join(work, "ckpt")], check=True)
        train(resume, model, optimizer, 2)
    elif case == "restore-file":  # mscale_restore(path) of one file: that step, or an error
        resume, model, optimizer = state(every=5)
        train(resume, model, optimizer, 15)
        resume.close()
        ckpt = os.path.join(work, "ckpt")
        print("next step", mscale.mscale_restore(os.path.join(ckpt, "snap-00000000000000000010.msnap")))
        corrupt(os.path.join(ckpt, "snap-00000000000000000010.msnap"))
        mscale.mscale_restore(os.path.join(ckpt, "snap-00000000000000000010.msnap"))
    else:
        sys.exit("unknown case " + case)
except MScaleError as e:
    print(e)
    sys.exit(mscale.exit_status_of(e))
