"""ERR_PY_002: a duration given as a bare number (seconds? milliseconds?)."""
from mscale.contract import mscale_contract


@mscale_contract(compute_profile="mlvm_light",
                 io_topology={"image_loader": {"cpu_cores": "48-51"}},
                 fault_tolerance={"recovery_point": "step_128", "heartbeat": 200})
def train():
    print("training ran")


train()
