/* The few kernel types cuda_trace.bpf.c uses, taken from
 * `bpftool btf dump file /sys/kernel/btf/vmlinux format c` (kernel 6.18), instead of the ~2.8 MB
 * full dump. Records carry preserve_access_index, so every field access is a CO-RE relocation that
 * libbpf resolves by *name* against the running kernel's BTF at load time: struct pt_regs lists only
 * the registers we read, and their offsets come from the kernel, not from this file.
 * Enum values are UAPI (include/uapi/linux/bpf.h) and never change. */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

typedef signed char __s8;
typedef unsigned char __u8;
typedef short int __s16;
typedef short unsigned int __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long int __s64;
typedef long long unsigned int __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __s32 s32;
typedef __u32 u32;
typedef __s64 s64;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };

/* x86-64 register frame; subset of the kernel's struct pt_regs (names as in the kernel). */
struct pt_regs {
	long unsigned int bp;
	long unsigned int r9;
	long unsigned int r8;
	long unsigned int ax;
	long unsigned int cx;
	long unsigned int dx;
	long unsigned int si;
	long unsigned int di;
	long unsigned int ip;
	long unsigned int sp;
};

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_CGROUP_ARRAY = 8,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

enum {
	BPF_F_USER_STACK = 256,
};

enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};

enum {
	BPF_RB_AVAIL_DATA = 0,
	BPF_RB_RING_SIZE = 1,
	BPF_RB_CONS_POS = 2,
	BPF_RB_PROD_POS = 3,
};

#pragma clang attribute pop

#endif /* __VMLINUX_H__ */
