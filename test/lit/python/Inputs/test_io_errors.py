"""Prints the coded error of one failure of mscale.io / mscale.gds, as a training script would see
it: ``test_io_errors.py CASE DIR`` (DIR: a scratch directory). The lit tests check the lines."""

import os
import shutil
import sys

if "MSCALE_WORKER_LIB" not in os.environ and shutil.which("mscale-exec"):
    os.environ["MSCALE_WORKER_LIB"] = os.path.join(
        os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("mscale-exec")))), "lib")

from mscale.errors import MScaleError


def main() -> int:
    case, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    small = os.path.join(scratch, "small.bin")
    with open(small, "wb") as f:
        f.write(b"0123456789")
    try:
        if case == "no-library":
            os.environ["MSCALE_WORKER_LIB"] = os.path.join(scratch, "nowhere", "libmscale_worker.so.1")
            from mscale import io
            io.UringReader()
        from mscale import io
        if case == "depth-refused":
            io.UringReader(queue_depth=1 << 20)
        elif case == "missing":
            io.UringReader().read_many([small, os.path.join(scratch, "missing.bin")])
        elif case == "read-fails":
            io.UringReader().read_ranges([(scratch, 0, 16)])
        elif case == "bad-depth":
            io.UringReader(queue_depth=0)
        elif case == "no-cpus":
            os.environ.pop("MSCALE_ROLE_IMAGE_LOADER_CPUS", None)
            io.pin_to_role("image_loader")
        elif case == "cpus-refused":
            os.environ["MSCALE_ROLE_IMAGE_LOADER_CPUS"] = "100000"
            io.pin_to_role("image_loader")
        elif case == "bad-io-depth":
            os.environ["MSCALE_ROLE_IMAGE_LOADER_IO_DEPTH"] = "deep"
            io.UringReader(role="image_loader")
        elif case == "past-end":
            io.UringReader().read_ranges([(small, 4, 8)])
        elif case == "failed-not-str":
            io.failed(3)
        elif case == "gds-required":
            from mscale.gds import GDSLoader
            GDSLoader(small, require_gds=True)
        elif case == "gds-past-end":
            from mscale.gds import GDSLoader
            GDSLoader(small).read(8, 4)
        else:
            print("unknown case " + case)
            return 2
    except MScaleError as e:
        print(e)
        return 1
    print("no error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
