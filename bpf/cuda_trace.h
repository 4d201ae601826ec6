/* Shared between cuda_trace.bpf.c (kernel side) and the loader (user side): the event record, the
 * per-function counters and the limits. Plain C with fixed-width types only. */
#ifndef MSC_BPF_CUDA_TRACE_H
#define MSC_BPF_CUDA_TRACE_H

#ifndef __VMLINUX_H__
#include <stdint.h>
typedef uint8_t msc_u8;
typedef uint32_t msc_u32;
typedef int32_t msc_s32;
typedef uint64_t msc_u64;
typedef int64_t msc_s64;
#else
typedef __u8 msc_u8;
typedef __u32 msc_u32;
typedef __s32 msc_s32;
typedef __u64 msc_u64;
typedef __s64 msc_s64;
#endif

/* Function ids are the bpf_cookie of each attachment; the table lives in CudaFunctions.cpp. */
#define MSC_TRACE_MAX_FN 32
/* log2 latency buckets in ns: bucket b counts latencies in [2^b, 2^(b+1)); bucket 0 also holds 0. */
#define MSC_TRACE_BUCKETS 40
#define MSC_TRACE_MAX_STACK 32
#define MSC_TRACE_COMM_LEN 16

/* Where an argument lives at function entry (x86-64 SysV): slot 1..6 = rdi rsi rdx rcx r8 r9,
 * slot 7.. = 8-byte stack slots above the return address. 0 = not captured. */
struct msc_arg_spec {
	msc_u8 stream_slot;
	msc_u8 bytes_slot;
	/* >= 0: the stream is a field at this byte offset of the struct the stream slot points to
	 * (cuLaunchKernelEx's CUlaunchConfig); -1: the slot holds the stream itself. */
	msc_s32 stream_deref;
};

/* Per function, per CPU; the loader sums the CPUs. */
struct msc_fn_stats {
	msc_u64 calls;    /* timed: completed calls (uretprobe seen); counted only: entries */
	msc_u64 total_ns;
	msc_u64 max_ns;
	msc_u64 errors;   /* calls that returned a CUresult other than CUDA_SUCCESS */
};

/* Per CPU. */
struct msc_misc_stats {
	msc_u64 enters;       /* entries that passed the filter */
	msc_u64 events;       /* events written to the ring buffer */
	msc_u64 drops;        /* events lost because the ring buffer was full */
	msc_u64 sampled_out;  /* events skipped by 1-in-N sampling */
	msc_u64 sample_seq;   /* the sampling counter */
};

struct msc_event {
	msc_u64 start_ns;     /* CLOCK_MONOTONIC at entry */
	msc_u64 latency_ns;
	msc_u64 stream;       /* CUstream handle, 0 = default stream or not applicable */
	msc_u64 bytes;        /* copy or allocation size, 0 if not applicable */
	msc_u64 cgroup_id;
	msc_u32 pid;          /* tgid */
	msc_u32 tid;
	msc_u32 fn;
	msc_s32 ret;          /* CUresult */
	msc_s32 stack_bytes;  /* bytes of stack[] filled by bpf_get_stack, < 0 on error */
	char comm[MSC_TRACE_COMM_LEN];
	msc_u32 pad;
	msc_u64 stack[MSC_TRACE_MAX_STACK]; /* user return addresses, innermost first */
};

#endif /* MSC_BPF_CUDA_TRACE_H */
