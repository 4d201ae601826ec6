# The owner's worker in lending-gpu.test and lending-rdma.test: it decodes (its trainer's GPU slices
# or queue pairs lent) until the test says go-compute, then computes (they are kept) until it says
# go-exit, saying each phase in a file of DIR once it has entered it.
import os
import sys

import mscale

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_files import say as say_in, wait_for as wait_in  # noqa: E402

directory = sys.argv[1]


def say(name, text=""):
    say_in(directory, name, text)


def wait_for(name):
    wait_in(directory, name, "lending_units_owner")


with mscale.phase("decode"):
    say("decoding")
    wait_for("go-compute")
with mscale.phase("compute"):
    say("computing")
    wait_for("go-exit")
