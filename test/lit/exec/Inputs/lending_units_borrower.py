# A borrower of GPU units or queue pairs (KIND: gpu | rdma), for lending-gpu.test and
# lending-rdma.test: between two small units of work it looks whether the node handed it some (or
# told it to let go of them), writes what it was told to told-N in DIR, and acknowledges: it has
# moved its work there, or stopped using what was lent.
#
#   lending_units_borrower.py DIR KIND
import os
import sys

import mscale

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_files import say as say_in  # noqa: E402

directory, kind = sys.argv[1:3]
pending, acknowledge = {
    "gpu": (mscale.gpu_slice_update, mscale.acknowledge_gpu_slices),
    "rdma": (mscale.rdma_queue_pair_update, mscale.acknowledge_rdma_queue_pairs),
}[kind]


def say(name, text=""):
    say_in(directory, name, text)


told = 0
say("working")
while not os.path.exists(os.path.join(directory, "borrower-exit")):
    total = 0
    for i in range(2000):  # a unit of work: well under a millisecond
        total += i * i
    update = pending()
    if update is not None:
        generation, handed = update
        told += 1
        say("told-%d" % told, handed)
        acknowledge(generation)
