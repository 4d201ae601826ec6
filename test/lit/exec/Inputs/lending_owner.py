# The owner's worker in lending-agent.test: it computes until the test says go, then decodes until
# the test says end, computes again until it says exit, saying each phase in a file of DIR once it
# has entered it.
import os
import sys

import mscale

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_files import say as say_in, wait_for as wait_in  # noqa: E402

directory = sys.argv[1]


def say(name, text=""):
    say_in(directory, name, text)


def wait_for(name):
    wait_in(directory, name, "lending_owner")


# Straight from compute into decode (nested), so that the entry itself must bring CPU 1 back.
with mscale.phase("compute"):
    say("computing")
    wait_for("go-decode")
    with mscale.phase("decode"):
        say("decoding")
        wait_for("go-end")
    say("computing-again")
    wait_for("go-exit")
