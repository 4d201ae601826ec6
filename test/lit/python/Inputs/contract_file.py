"""file= and name=: the contract is an existing .msc file's (next to this script)."""
import os

from mscale.contract import mscale_contract


@mscale_contract(file=os.environ.get("CONTRACT_FILE", "contract_jureca.msc"),
                 name=os.environ.get("CONTRACT_NAME", "qwen_vl") or None,
                 topology=os.environ["CONTRACT_TOPOLOGY"])
def train():
    print("training ran")


if __name__ == "__main__":
    result = train.check()
    print("checked %s from %s" % (result.contract, os.path.basename(result.source_file)))
    train()
