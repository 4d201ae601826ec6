# The owner's worker in lending-gpu.test: it decodes (its trainer's GPU slices lent) until the test
# says go-compute, then computes (the slices kept) until it says go-exit, saying each phase in a file
# of DIR once it has entered it.
import os
import sys
import time

import mscale

directory = sys.argv[1]


def say(name):
    open(os.path.join(directory, name), "w").close()


def wait_for(name):
    path = os.path.join(directory, name)
    for _ in range(6000):
        if os.path.exists(path):
            return
        time.sleep(0.01)
    sys.exit("lending_gpu_owner: no " + name + " within 60 s")


with mscale.phase("decode"):
    say("decoding")
    wait_for("go-compute")
with mscale.phase("compute"):
    say("computing")
    wait_for("go-exit")
