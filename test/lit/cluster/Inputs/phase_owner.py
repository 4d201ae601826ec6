# The worker of an owner in borrow.sh: step after step it decodes (keeping its loader's CPUs) and
# computes (lending them), for SECONDS seconds or until it is stopped. Its phases go to the node
# through the control page its agent maps (mscale.phase: a store, no system call).
import sys
import time

import mscale

end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    with mscale.phase("decode"):
        time.sleep(0.02)
    with mscale.phase("compute"):
        time.sleep(0.08)
