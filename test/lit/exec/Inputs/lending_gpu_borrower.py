# A borrower of GPU units, for lending-gpu.test: between two small units of work it looks whether
# the node handed it GPU slices (or told it to let go of them), writes what it was told to told-N
# in DIR, and acknowledges: it has moved its work, or stopped using the lent SMs.
import os
import sys

import mscale

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_files import say as say_in  # noqa: E402

directory = sys.argv[1]


def say(name, text=""):
    say_in(directory, name, text)


told = 0
say("working")
while not os.path.exists(os.path.join(directory, "borrower-exit")):
    total = 0
    for i in range(2000):  # a unit of work: well under a millisecond
        total += i * i
    update = mscale.gpu_slice_update()
    if update is not None:
        generation, slices = update
        told += 1
        say("told-%d" % told, slices)
        mscale.acknowledge_gpu_slices(generation)
