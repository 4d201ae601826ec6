# The owner's worker in lending-agent.test: it computes until the test says go, then decodes until
# the test says end, computes again until it says exit, saying each phase in a file of DIR once it
# has entered it.
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
    sys.exit("lending_owner: no " + name + " within 60 s")


# Straight from compute into decode (nested), so that the entry itself must bring CPU 1 back.
with mscale.phase("compute"):
    say("computing")
    wait_for("go-decode")
    with mscale.phase("decode"):
        say("decoding")
        wait_for("go-end")
    say("computing-again")
    wait_for("go-exit")
