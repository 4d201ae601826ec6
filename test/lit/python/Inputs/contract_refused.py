"""A contract the recorded JURECA-DC node cannot honour: the loader's CPUs are not on NUMA node 3."""
import os

from mscale.contract import mscale_contract


@mscale_contract(
    compute_profile="mlvm-heavy",
    io_topology={
        "image_loader": {"cpu_cores": [2, 3, 4, 5], "numa_node": 3},
        "patch_embed": {"gpu": "0000:03:00.0", "sm_slices": 1},
    },
    topology=os.environ["CONTRACT_TOPOLOGY"],
)
def train():
    print("training ran")


if __name__ == "__main__":
    train()
