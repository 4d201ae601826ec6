"""``python3 -m mscale``: check contracts from the shell, explain error codes.

    python3 -m mscale check FILE.msc|SCRIPT.py [--topology live|FILE] [--name N]
    python3 -m mscale explain CODE

Exit status: 0 accepted, 1 a contract is refused or the input has errors, 2 usage or I/O error.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import subprocess
import sys
from typing import List, Optional

from mscale.contract import Contract, ContractError, check_file, find_tool
from mscale.errors import MScaleError

# The module name a checked script is imported under: not "__main__", so that its training (under
# `if __name__ == "__main__":`) does not run.
_SCRIPT_MODULE = "__mscale_check__"


def _report(error: MScaleError) -> int:
    print(str(error), file=sys.stderr)
    return 1


def _decorated(path: pathlib.Path) -> List[Contract]:
    """Imports the script and returns the contracts of its module-level decorated functions."""
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(_SCRIPT_MODULE, str(path))
    if spec is None or spec.loader is None:
        raise ContractError("ERR_PY_011", path, "it cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_SCRIPT_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except MScaleError:
        raise  # a coded error of the decorator itself: reported as it is
    except BaseException as e:  # the script's own failure: SystemExit and KeyboardInterrupt too
        raise ContractError("ERR_PY_011", path, "importing it raised %s: %s" % (type(e).__name__, e)) from None
    contracts = []
    for value in vars(module).values():
        contract = getattr(value, "mscale_contract", None)
        if isinstance(contract, Contract) and getattr(value, "__module__", None) == _SCRIPT_MODULE:
            contracts.append(contract)
    if not contracts:
        raise ContractError("ERR_PY_011", path, "it has no @mscale_contract function at module level")
    return contracts


def _check(args: argparse.Namespace) -> int:
    path = pathlib.Path(args.file)
    failed = 0
    try:
        if path.suffix == ".msc":
            results = check_file(path, topology=args.topology or "live", name=args.name)
        elif path.suffix == ".py":
            if not path.is_file():
                raise ContractError("ERR_PY_011", path, "no such file")
            results = []
            for contract in _decorated(path):
                if args.name is not None and contract.name != args.name:
                    continue
                try:
                    results.append(contract.check(args.topology))
                except MScaleError as error:
                    failed += _report(error)
            if args.name is not None and not results and not failed:
                raise ContractError("ERR_PY_011", path, "it has no @mscale_contract function named '%s'" % args.name)
        else:
            raise ContractError("ERR_PY_011", path, "expected a contract file (.msc) or a Python script (.py)")
    except MScaleError as error:
        return _report(error)
    for result in results:
        where = "this node" if result.topology == "live" else "topology '%s'" % os.path.basename(result.topology)
        print("mscale: contract '%s' can be honoured on %s" % (result.contract, where))
    return 1 if failed else 0


def _explain(args: argparse.Namespace) -> int:
    try:
        mscalec = find_tool("mscalec")
    except MScaleError as error:
        return _report(error)
    return subprocess.call([mscalec, "--explain", args.code])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m mscale",
        description="MegaScale-Omni for PyTorch scripts: check contracts against a node, explain codes.",
        epilog="Exit status: 0 accepted, 1 refused or errors, 2 usage or I/O error. "
               "See docs/python_contract.md.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = commands.add_parser(
        "check", help="check a contract file, or the @mscale_contract functions of a script, against a node",
        description="Compile the contracts of FILE.msc, or of the module-level @mscale_contract functions of "
                    "SCRIPT.py (imported, not run), for the node; print clang-style diagnostics.")
    check.add_argument("file", metavar="FILE.msc|SCRIPT.py")
    check.add_argument("--topology", metavar="live|FILE",
                       help="the node: 'live' (default for .msc; a script's decorators say their own) or a "
                            "topology file or directory")
    check.add_argument("--name", metavar="N", help="check only the contract named N")
    check.set_defaults(run=_check)
    explain = commands.add_parser("explain", help="explain an error code (mscalec --explain)",
                                  description="Print the long explanation of an error code.")
    explain.add_argument("code", metavar="CODE")
    explain.set_defaults(run=_explain)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
