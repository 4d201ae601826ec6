# How the lending tests' workers and their drivers talk: through files in a directory the test owns.
# A worker says what it has done by creating a file (atomically, with an optional text), and waits
# for the driver's word the same way.
import os
import sys
import time


def say(directory, name, text=""):
    path = os.path.join(directory, name)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def wait_for(directory, name, who, seconds=60):
    path = os.path.join(directory, name)
    end = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit("%s: no %s within %d s" % (who, name, seconds))
        time.sleep(0.01)
