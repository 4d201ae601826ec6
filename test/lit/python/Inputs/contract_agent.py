"""With an agent socket, the first call submits the compiled plan to the node agent."""
from mscale.contract import mscale_contract


@mscale_contract(name="lit_py_agent", io_topology={"data": {"cpu_cores": [1], "io_depth": 16}})
def train():
    print("training ran")


if __name__ == "__main__":
    train()
    print("contract id %s, mode %s" % (train.mscale_contract.enforce().contract_id,
                                       train.mscale_contract.enforce().mode))
