"""ERR_PY_010: the decorator without its arguments."""
from mscale.contract import mscale_contract


@mscale_contract
def train():
    print("training ran")
