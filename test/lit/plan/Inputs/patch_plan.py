"""Edits plan files for the ERR_PLAN_* tests, byte by byte (the header layout of plan/PlanFile.h:
"MSCPLAN\\0" | major u16 | minor u16 | reserved u32 | payload size u64 | FNV-1a 64 of the payload u64).

  patch_plan.py IN OUT flip OFFSET        xor one byte with 0xff (OFFSET counts from the payload start)
  patch_plan.py IN OUT major N            set the header's major version
  patch_plan.py IN OUT size N             set the header's payload size
  patch_plan.py IN OUT append BYTES       append bytes after the payload
  patch_plan.py IN OUT payload HEX        replace the payload, with a correct size and checksum
"""
import struct
import sys


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return h


def main():
    src, dst, op, arg = sys.argv[1:5]
    data = bytearray(open(src, "rb").read())
    if op == "flip":
        data[32 + int(arg)] ^= 0xff
    elif op == "major":
        data[8:10] = struct.pack("<H", int(arg))
    elif op == "size":
        data[16:24] = struct.pack("<Q", int(arg))
    elif op == "append":
        data += arg.encode()
    elif op == "payload":
        payload = bytes.fromhex(arg)
        data = data[:16] + struct.pack("<QQ", len(payload), fnv1a(payload)) + payload
    else:
        sys.exit("unknown operation " + op)
    open(dst, "wb").write(bytes(data))


main()
