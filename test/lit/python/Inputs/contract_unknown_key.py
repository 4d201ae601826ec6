"""ERR_PY_001: a key the contract language does not have, in a role."""
from mscale.contract import mscale_contract


@mscale_contract(compute_profile="mlvm_light",
                 io_topology={"image_loader": {"cpu_cores": "48-51", "numa_nod": 3}})
def train():
    print("training ran")


train()
