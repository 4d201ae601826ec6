"""A contract the recorded JURECA-DC node can honour, in every value form the decorator takes."""
import os

from mscale.contract import mscale_contract


@mscale_contract(
    compute_profile=os.environ.get("CONTRACT_PROFILE", "mlvm-heavy"),
    io_topology={
        "image_loader": {"cpu_cores": range(48, 52), "numa_node": 3, "threads": 4, "io_depth": 128},
        "patch_embed": {"gpu": "0000:03:00.0", "sm_slices": 1},
        "rdma_cache": {"memory_pool": "hugepage_2MB", "memory_pool_count": 1024},
    },
    fault_tolerance={"recovery_point": "step_128", "heartbeat": "200ms", "stateful_io": True},
    scaling={"density_deviation": "15%", "scale_up_below": 70, "throttle_at": "75C"},
    policy={"affinity_policy": "numa_first"},
    topology=os.environ["CONTRACT_TOPOLOGY"],
)
def train(steps):
    print("training ran %d steps" % steps)


if __name__ == "__main__":
    train(3)
    train(4)
