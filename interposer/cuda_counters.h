/* The shared-memory file through which the CUDA interposer (libmscale_cuda_interposer.so, preloaded
 * into a worker) publishes its per-thread call counters, and which mscale-trace reads (bpf/
 * InterposerCounters.cpp). One file per process, "<pid>.counters" in the directory named by
 * MSCALE_CUDA_COUNTERS; plain C with fixed-width types, shared by both sides. */
#ifndef MSC_INTERPOSER_CUDA_COUNTERS_H
#define MSC_INTERPOSER_CUDA_COUNTERS_H

#include <stdint.h>

#define MSC_COUNTERS_MAGIC 0x31726e63637363ull /* "cscncr1": written last, when the header is complete */
#define MSC_COUNTERS_VERSION 1
#define MSC_COUNTERS_MAX_FN 32   /* as MSC_TRACE_MAX_FN: the reader checks */
#define MSC_COUNTERS_BUCKETS 40  /* log2 ns buckets, as MSC_TRACE_BUCKETS */
#define MSC_COUNTERS_NAME_LEN 32
/* Thread slots per process; threads past the last but one share the last slot with atomic adds. */
#define MSC_COUNTERS_THREADS 256
#define MSC_COUNTERS_SUFFIX ".counters"

/* The environment of a process the interposer counts in. */
#define MSC_COUNTERS_DIR_ENV "MSCALE_CUDA_COUNTERS"      /* the directory; unset: pass through */
#define MSC_COUNTERS_MODE_ENV "MSCALE_CUDA_COUNTERS_MODE" /* "count" (default) or "latency" */

/* One function in one thread. Only that thread writes it (relaxed atomic stores, no locked
 * instructions) except in the shared last slot; the reader loads it while it changes. */
struct msc_fn_counters {
	uint64_t calls;    /* as msc_fn_stats: timed functions count completed calls, others entries */
	uint64_t errors;
	uint64_t total_ns;
	uint64_t max_ns;
	uint64_t histogram[MSC_COUNTERS_BUCKETS]; /* bucket b: latency in [2^b, 2^(b+1)) ns */
};

struct msc_thread_counters {
	struct msc_fn_counters fn[MSC_COUNTERS_MAX_FN];
};

struct msc_counters_file {
	uint64_t magic;
	uint32_t version;
	uint32_t pid;
	uint32_t functions;     /* names[0..functions) are set */
	uint32_t threads_used;  /* slots handed out (atomic); may exceed MSC_COUNTERS_THREADS */
	uint32_t timed_mask;    /* bit i: function i is timed (latency, errors, histogram) */
	uint32_t pad;
	char comm[16];
	char names[MSC_COUNTERS_MAX_FN][MSC_COUNTERS_NAME_LEN];
	struct msc_thread_counters thread[MSC_COUNTERS_THREADS];
};

#endif /* MSC_INTERPOSER_CUDA_COUNTERS_H */
