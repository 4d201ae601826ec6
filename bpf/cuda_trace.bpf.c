// SPDX-License-Identifier: GPL-2.0
/* Kernel side of mscale-trace: attached once per CUDA entry point with the function id as bpf_cookie.
 * A timed function gets cuda_enter and cuda_exit: entry records the time and the interesting
 * arguments per (thread, function); exit updates per-CPU counters and a log2 latency histogram, and
 * writes an event with the user stack to the ring buffer when the call passes the event filter.
 * A counted-only function gets cuda_count alone: one trap per call instead of two, and one per-CPU
 * counter instead of a hash update and delete.
 * Configuration is const volatile: the loader sets it between open and load. */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cuda_trace.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool filter_pid = false;     /* only tgids in pid_filter */
const volatile bool filter_cgroup = false;  /* only tasks in (or below) cgroup_filter[0] */
const volatile bool do_histogram = true;
const volatile bool emit_events = true;
const volatile bool capture_stacks = true;
const volatile __u64 min_latency_ns = 0;    /* events only for calls at least this long */
const volatile __u32 sample_every = 1;      /* and then only one in N of them */
const volatile __u32 event_mask = 0xffffffff;  /* functions that may produce events */
const volatile __u32 always_mask = 0;       /* functions whose every call is an event */
const volatile __u64 wakeup_bytes = 256 * 1024; /* wake the reader when this much is queued */
const volatile struct msc_arg_spec arg_spec[MSC_TRACE_MAX_FN] = {};

struct start_key {
	__u32 tid;
	__u32 fn;
};

struct start_val {
	__u64 ts;
	__u64 stream;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct start_key);
	__type(value, struct start_val);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

/* Processes that already produced an event. The first event of a process wakes the reader at
 * once, so it can read /proc/PID/maps (for symbols) while the process is surely still alive. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} seen_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MSC_TRACE_MAX_FN);
	__type(key, __u32);
	__type(value, struct msc_fn_stats);
} fn_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MSC_TRACE_MAX_FN * MSC_TRACE_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct msc_misc_stats);
} misc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024); /* resized by the loader before load */
} events SEC(".maps");

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;
	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* The six register arguments, each loaded at a constant offset of ctx: the verifier rejects a
 * ctx access at a computed offset, which is what a switch over ctx fields compiles into. */
struct reg_args {
	__u64 r[6];
};

#define LOAD_PINNED(dst, expr)                      \
	do {                                        \
		__u64 __v = (expr);                 \
		asm volatile("" : "+r"(__v));       \
		(dst) = __v;                        \
	} while (0)

static __always_inline void load_reg_args(struct pt_regs *ctx, struct reg_args *a)
{
	LOAD_PINNED(a->r[0], PT_REGS_PARM1(ctx));
	LOAD_PINNED(a->r[1], PT_REGS_PARM2(ctx));
	LOAD_PINNED(a->r[2], PT_REGS_PARM3(ctx));
	LOAD_PINNED(a->r[3], PT_REGS_PARM4(ctx));
	LOAD_PINNED(a->r[4], PT_REGS_PARM5(ctx));
	LOAD_PINNED(a->r[5], ctx->r9); /* no PT_REGS_PARM6 in libbpf 1.1 */
}

static __always_inline __u64 read_slot(struct pt_regs *ctx, const struct reg_args *a, __u32 slot)
{
	__u64 v = 0;
	if (slot == 0 || slot > 16)
		return 0;
	if (slot <= 6)
		return a->r[slot - 1];
	/* [sp] is the return address; stack argument k (slot 7 + k) is at sp + 8 * (k + 1). */
	bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8 * (slot - 6)));
	return v;
}

/* Counting mode: the only probe of a function whose latency is not asked for. */
SEC("uprobe")
int BPF_KPROBE(cuda_count)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);

	if (fn >= MSC_TRACE_MAX_FN)
		return 0;
	if (filter_pid) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (!bpf_map_lookup_elem(&pid_filter, &tgid))
			return 0;
	}
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return 0;
	struct msc_fn_stats *st = bpf_map_lookup_elem(&fn_stats, &fn);
	if (st)
		st->calls++;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(cuda_enter)
{
	__u64 fn = bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0;

	if (fn >= MSC_TRACE_MAX_FN)
		return 0;
	if (filter_pid && !bpf_map_lookup_elem(&pid_filter, &tgid))
		return 0;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return 0;

	struct start_key key = { .tid = (__u32)id, .fn = (__u32)fn };
	struct start_val val = {};
	if (emit_events) {
		struct reg_args regs;
		load_reg_args(ctx, &regs);
		__u32 stream_slot = arg_spec[fn].stream_slot;
		__s32 deref = arg_spec[fn].stream_deref;
		__u64 s = read_slot(ctx, &regs, stream_slot);
		if (deref >= 0 && deref < 4096 && s) {
			__u64 p = s;
			s = 0;
			bpf_probe_read_user(&s, sizeof(s), (void *)(p + deref));
		}
		val.stream = s;
		val.bytes = read_slot(ctx, &regs, arg_spec[fn].bytes_slot);
	}
	struct msc_misc_stats *m = bpf_map_lookup_elem(&misc, &zero);
	if (m)
		m->enters++;
	val.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &key, &val, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(cuda_exit, long ret)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 fn = bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	__u32 zero = 0;

	if (fn >= MSC_TRACE_MAX_FN)
		return 0;
	struct start_key key = { .tid = (__u32)id, .fn = (__u32)fn };
	struct start_val *sv = bpf_map_lookup_elem(&starts, &key);
	if (!sv)
		return 0; /* filtered out at entry, or entered before the probes were attached */
	struct start_val start = *sv;
	bpf_map_delete_elem(&starts, &key);
	__u64 lat = now - start.ts;
	__u32 fn32 = (__u32)fn;

	struct msc_fn_stats *st = bpf_map_lookup_elem(&fn_stats, &fn32);
	if (st) {
		st->calls++;
		st->total_ns += lat;
		if (lat > st->max_ns)
			st->max_ns = lat;
		if ((int)ret != 0)
			st->errors++;
	}
	if (do_histogram) {
		__u32 b = log2_u64(lat);
		if (b >= MSC_TRACE_BUCKETS)
			b = MSC_TRACE_BUCKETS - 1;
		__u32 hk = fn32 * MSC_TRACE_BUCKETS + b;
		__u64 *h = bpf_map_lookup_elem(&hist, &hk);
		if (h)
			(*h)++;
	}
	if (!emit_events)
		return 0;

	struct msc_misc_stats *m = bpf_map_lookup_elem(&misc, &zero);
	if (!m)
		return 0;
	if (!((always_mask >> fn32) & 1)) {
		if (!((event_mask >> fn32) & 1) || lat < min_latency_ns)
			return 0;
		if (sample_every > 1 && (m->sample_seq++ % sample_every) != 0) {
			m->sampled_out++;
			return 0;
		}
	}

	struct msc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		m->drops++;
		return 0;
	}
	e->start_ns = start.ts;
	e->latency_ns = lat;
	e->stream = start.stream;
	e->bytes = start.bytes;
	e->cgroup_id = bpf_get_current_cgroup_id();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->fn = fn32;
	e->ret = (__s32)ret;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	if (capture_stacks)
		e->stack_bytes = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);
	else
		e->stack_bytes = 0;
	m->events++;
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
										    : BPF_RB_NO_WAKEUP;
	__u32 tgid = e->pid;
	if (!bpf_map_lookup_elem(&seen_pids, &tgid)) {
		__u8 one = 1;
		bpf_map_update_elem(&seen_pids, &tgid, &one, BPF_ANY);
		flags = BPF_RB_FORCE_WAKEUP;
	}
	bpf_ringbuf_submit(e, flags);
	return 0;
}
