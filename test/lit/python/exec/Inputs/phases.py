"""The worker's side of phases under mscale-exec: the names the executor gives (MSCALE_PHASES), a
`with` block and a decorated step function entering them, leaving back to where it was, and a name
the plan does not have (ERR_PY_050). Prints one line per fact."""
import os
import sys

import mscale

print("phases:", os.environ.get("MSCALE_PHASES"))
print("before:", repr(mscale.current_phase()))
with mscale.phase("decode"):
    print("inside:", mscale.current_phase())
    with mscale.phase("eval"):
        print("nested:", mscale.current_phase())
    print("back:", mscale.current_phase())
print("after:", repr(mscale.current_phase()))


@mscale.phase("eval")
def step():
    return mscale.current_phase()


print("decorated:", step(), repr(mscale.current_phase()))
try:
    with mscale.phase("evaluate"):
        pass
except mscale.UsageError as e:
    print(e)
try:
    mscale.phase("")
except mscale.UsageError as e:
    print(e)
# Yielding: a worker nobody lends to is never asked.
print("yield asked:", mscale.yield_requested(), mscale.wait_for_yield_request(0.01), mscale.yield_now())
try:
    mscale.wait_for_yield_request(-1)
except mscale.UsageError as e:
    print(e)
# GPU slices: a worker nobody lends to is never handed any; a generation must be one it was given.
print("gpu slices:", mscale.gpu_slice_update())
for generation in (0, -1, True, "1"):
    try:
        mscale.acknowledge_gpu_slices(generation)
    except mscale.UsageError as e:
        print(e)
# Queue pairs: the same, on their own hand-over.
print("queue pairs:", mscale.rdma_queue_pair_update())
for generation in (0, 2**64):
    try:
        mscale.acknowledge_rdma_queue_pairs(generation)
    except mscale.UsageError as e:
        print(e)
sys.stdout.flush()
