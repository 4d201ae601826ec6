# A borrower that cooperates, for lending-yield.test: it works in small units and looks between two
# of them whether the node asks it to yield; when asked it writes how long it was given (ms) to
# asked-N in DIR, yields, and writes resumed-N once it is lent CPUs again. `working` says it has
# looked once (from then on the node asks it first).
import os
import sys

import mscale

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_files import say as say_in  # noqa: E402

directory = sys.argv[1]


def say(name, text=""):
    say_in(directory, name, text)


asked = 0
units = 0
while not os.path.exists(os.path.join(directory, "borrower-exit")):
    total = 0
    for i in range(2000):  # a unit of work: well under a millisecond
        total += i * i
    units += 1
    left = mscale.yield_requested()
    if units == 1:
        say("working")
    if left is not None:
        asked += 1
        say("asked-%d" % asked, "%.3f" % (left * 1e3))
        mscale.yield_now()
        say("resumed-%d" % asked, str(units))
