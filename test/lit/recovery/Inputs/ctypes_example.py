#!/usr/bin/env python3
"""The ctypes example of docs/recovery.md, run for real: usage: ctypes_example.py LIBPATH DIR"""
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1])
c_u64, c_p = ctypes.c_uint64, ctypes.c_void_p

class Options(ctypes.Structure):
    _fields_ = [("disk_dir", ctypes.c_char_p), ("memory_tier", ctypes.c_int),
                ("memory_fd", ctypes.c_int), ("memory_name", ctypes.c_char_p),
                ("keep", ctypes.c_uint32), ("memory_slots", ctypes.c_uint32)]

lib.msc_snap_last_error.restype = ctypes.c_char_p
lib.msc_snap_restored_step.restype = c_u64
lib.msc_snap_restored_tier.restype = ctypes.c_char_p
lib.msc_snap_begin.argtypes = [c_p, c_u64, ctypes.POINTER(c_p)]
lib.msc_snap_add_blob.argtypes = [c_p, ctypes.c_char_p, ctypes.c_int, c_p, c_u64]
lib.msc_snap_set_loader.argtypes = [c_p, ctypes.c_char_p] + [c_u64] * 5
lib.msc_snap_restored_blob.argtypes = [c_p, ctypes.c_char_p, ctypes.POINTER(c_p), ctypes.POINTER(c_u64)]
lib.msc_snap_restored_step.argtypes = [c_p]
lib.msc_snap_restored_tier.argtypes = [c_p]

def check(rc):
    if rc: raise RuntimeError(lib.msc_snap_last_error().decode())   # "error[ERR_SNAP_004]: ..."

store = c_p()
check(lib.msc_snap_open(ctypes.byref(Options(sys.argv[2].encode(), 1, -1, b"msc-ctypes-%d" % os.getpid(), 3, 2)), ctypes.byref(store)))

params = (ctypes.c_float * 1024)()                # or a numpy array's ctypes.data
w = c_p()
check(lib.msc_snap_begin(store, 100, ctypes.byref(w)))
check(lib.msc_snap_add_blob(w, b"model.params", 1, ctypes.addressof(params), ctypes.sizeof(params)))
check(lib.msc_snap_set_loader(w, b"shard-003.dat", 4096, 42, 1, 3, 96))
check(lib.msc_snap_commit(w, 3))                  # both tiers; frees w

r = c_p()
check(lib.msc_snap_restore(store, ctypes.byref(r)))
data, size = c_p(), c_u64()
check(lib.msc_snap_restored_blob(r, b"model.params", ctypes.byref(data), ctypes.byref(size)))
ctypes.memmove(params, data, size.value)
print(lib.msc_snap_restored_step(r), lib.msc_snap_restored_tier(r).decode())   # 100 memory
lib.msc_snap_restored_free(r)
lib.msc_snap_destroy_memory_tier.argtypes = [c_p]
lib.msc_snap_destroy_memory_tier(store)
lib.msc_snap_close(store)
