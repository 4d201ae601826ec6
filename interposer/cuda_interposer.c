/* libmscale_cuda_interposer.so: counts calls of the CUDA driver (and cudaLaunchKernel) in the
 * process it is preloaded into, for mscale-trace, at a few ns per call where a kernel uprobe costs
 * microseconds (docs/PERFORMANCE.md, "mscale-trace: probe cost").
 *
 * It defines the traced entry points itself, so a program linked against libcuda calls these
 * first, and it wraps dlsym, so a program that dlopens libcuda.so.1 and looks the functions up (as
 * the CUDA runtime and the frameworks do) gets these too. Each wrapper forwards to the real
 * function: the one dlsym returned, else the next definition after this library, else the one in
 * an already loaded libcuda.so.1 / libcudart.so.
 *
 * Counters are per thread, in a file mapped shared (cuda_counters.h): a call costs a thread-local
 * load, a compare and a store, no syscall and no locked instruction. Functions that wait for the
 * device (and, in latency mode, every function) are timed with the vDSO clock as well. The file is
 * created at the first counted call of a process; a forked child makes its own.
 *
 * cuGetProcAddress (v1 and v2), through which the CUDA runtime finds the driver's functions, hands
 * out the wrappers as well. Not interposed: dlvsym, and pointers a program got before the
 * interposer was loaded (it is preloaded: there are none). */
#define _GNU_SOURCE
#include "interposer/cuda_counters.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The wrapped functions: id, synchronising (timed even when only counting), name. The ids are this
 * library's own; the file carries the names, and the reader maps them onto its table. */
#define MSC_WRAPPED(X)                        \
	X(0, 0, cuLaunchKernel)               \
	X(1, 0, cuLaunchKernelEx)             \
	X(2, 0, cuMemcpyAsync)                \
	X(3, 0, cuMemcpyHtoDAsync_v2)         \
	X(4, 0, cuMemcpyDtoHAsync_v2)         \
	X(5, 0, cuMemcpyDtoDAsync_v2)         \
	X(6, 1, cuMemcpy)                     \
	X(7, 1, cuMemcpyHtoD_v2)              \
	X(8, 1, cuMemcpyDtoH_v2)              \
	X(9, 1, cuMemcpyDtoD_v2)              \
	X(10, 1, cuStreamSynchronize)         \
	X(11, 1, cuCtxSynchronize)            \
	X(12, 1, cuEventSynchronize)          \
	X(13, 0, cuMemAlloc_v2)               \
	X(14, 0, cuMemFree_v2)                \
	X(15, 0, cudaLaunchKernel)
#define MSC_NFN 16
_Static_assert(MSC_NFN <= MSC_COUNTERS_MAX_FN, "too many wrapped functions");

#define NAME_OF(id, sync, name) #name,
static const char *const g_names[MSC_NFN] = { MSC_WRAPPED(NAME_OF) };
#define SYNC_BIT(id, sync, name) | ((uint32_t)(sync) << (id))
static const uint32_t g_sync_mask = 0 MSC_WRAPPED(SYNC_BIT);

/* ---- process state ------------------------------------------------------------------------- */

static void *(*g_real_dlsym)(void *, const char *);
static void *g_real[MSC_NFN];          /* atomic: the real functions, once known */
static int g_enabled;                   /* MSCALE_CUDA_COUNTERS is set */
static uint32_t g_timed_mask;           /* functions timed in this process */
static char g_dir[4096];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct msc_counters_file *g_file; /* this process's file, NULL until the first call */
static unsigned g_generation = 1;        /* bumped in a forked child: thread slots are stale */

static __thread struct msc_thread_counters *t_slot __attribute__((tls_model("initial-exec")));
static __thread unsigned t_generation __attribute__((tls_model("initial-exec")));
static __thread int t_shared __attribute__((tls_model("initial-exec"))); /* the last, shared slot */

static void find_real_dlsym(void)
{
	if (g_real_dlsym)
		return;
	/* dlsym itself is interposed below: the real one comes by version (glibc >= 2.34, then older). */
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	__atomic_store_n(&g_real_dlsym, (void *(*)(void *, const char *))p, __ATOMIC_RELEASE);
}

static void on_fork_prepare(void) { pthread_mutex_lock(&g_lock); }
static void on_fork_parent(void) { pthread_mutex_unlock(&g_lock); }
static void on_fork_child(void)
{
	pthread_mutex_init(&g_lock, NULL);
	if (g_file)
		munmap(g_file, sizeof(*g_file)); /* the parent's: the child counts in a file of its own */
	g_file = NULL;
	__atomic_add_fetch(&g_generation, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void interposer_init(void)
{
	find_real_dlsym();
	const char *dir = getenv(MSC_COUNTERS_DIR_ENV), *mode = getenv(MSC_COUNTERS_MODE_ENV);
	if (!dir || !*dir || strlen(dir) >= sizeof(g_dir))
		return;
	strcpy(g_dir, dir);
	g_timed_mask = mode && strcmp(mode, "latency") == 0 ? (1u << MSC_NFN) - 1 : g_sync_mask;
	pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
	g_enabled = 1;
}

/* WRN_TRACE_005 of support/DiagnosticsTrace.def, in its words: the interposer links nothing of ours,
 * and a process it cannot count must say so with the project's code. */
static void warn_not_counted(const char *path)
{
	fprintf(stderr, "warning[WRN_TRACE_005]: the CUDA interposer cannot write '%s': %s; this process's CUDA calls "
			"are not counted\n",
		path, strerror(errno));
}

/* Creates and maps "<dir>/<pid>.counters"; the magic goes in last. Called with g_lock held. */
static struct msc_counters_file *create_file(void)
{
	char path[sizeof(g_dir) + 32];
	pid_t pid = getpid();
	snprintf(path, sizeof(path), "%s/%d%s", g_dir, (int)pid, MSC_COUNTERS_SUFFIX);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct msc_counters_file)) != 0) {
		warn_not_counted(path);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	void *p = mmap(NULL, sizeof(struct msc_counters_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		warn_not_counted(path);
		return NULL;
	}
	struct msc_counters_file *f = p;
	f->version = MSC_COUNTERS_VERSION;
	f->pid = (uint32_t)pid;
	f->functions = MSC_NFN;
	f->timed_mask = g_timed_mask;
	prctl(PR_GET_NAME, f->comm);
	for (int i = 0; i < MSC_NFN; ++i)
		strncpy(f->names[i], g_names[i], MSC_COUNTERS_NAME_LEN - 1);
	__atomic_store_n(&f->magic, MSC_COUNTERS_MAGIC, __ATOMIC_RELEASE);
	return f;
}

/* The calling thread's slot; NULL when this process cannot count. Once per thread (and after fork). */
static __attribute__((noinline)) struct msc_thread_counters *take_slot(void)
{
	unsigned generation = __atomic_load_n(&g_generation, __ATOMIC_RELAXED);
	pthread_mutex_lock(&g_lock);
	if (!g_file)
		g_file = create_file();
	struct msc_counters_file *f = g_file;
	pthread_mutex_unlock(&g_lock);
	if (!f) {
		__atomic_store_n(&g_enabled, 0, __ATOMIC_RELAXED);
		return NULL;
	}
	uint32_t i = __atomic_fetch_add(&f->threads_used, 1, __ATOMIC_RELAXED);
	t_shared = i >= MSC_COUNTERS_THREADS - 1;
	t_slot = &f->thread[t_shared ? MSC_COUNTERS_THREADS - 1 : i];
	t_generation = generation;
	return t_slot;
}

static inline struct msc_thread_counters *slot(void)
{
	if (LIKELY(t_slot && t_generation == __atomic_load_n(&g_generation, __ATOMIC_RELAXED)))
		return t_slot;
	return take_slot();
}

/* One writer per slot: a relaxed load and store (a plain add) keeps the reader's loads race-free. */
static inline void bump(uint64_t *c, uint64_t by)
{
	if (LIKELY(!t_shared))
		__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(c, by, __ATOMIC_RELAXED);
}

static inline void count(int id)
{
	struct msc_thread_counters *s = slot();
	if (LIKELY(s != NULL))
		bump(&s->fn[id].calls, 1);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline unsigned log2_bucket(uint64_t ns)
{
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;
	return b < MSC_COUNTERS_BUCKETS ? b : MSC_COUNTERS_BUCKETS - 1;
}

static void record(int id, int failed, uint64_t ns)
{
	struct msc_thread_counters *s = slot();
	if (!s)
		return;
	struct msc_fn_counters *c = &s->fn[id];
	bump(&c->calls, 1);
	bump(&c->errors, failed != 0);
	bump(&c->total_ns, ns);
	bump(&c->histogram[log2_bucket(ns)], 1);
	if (ns > __atomic_load_n(&c->max_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&c->max_ns, ns, __ATOMIC_RELAXED); /* the shared slot may lose a max: fine */
}

/* The real `name`: the next definition after this library, else the one in an already loaded
 * libcuda / libcudart. NULL when there is none. Callers cache what it finds. */
static __attribute__((noinline)) void *find_next(const char *name)
{
	void *p = NULL;
	find_real_dlsym();
	if (!g_real_dlsym)
		return NULL;
	p = g_real_dlsym(RTLD_NEXT, name);
	static const char *const libraries[] = { "libcuda.so.1", "libcuda.so", "libcudart.so" };
	for (size_t i = 0; !p && i < sizeof(libraries) / sizeof(libraries[0]); ++i) {
		void *h = dlopen(libraries[i], RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			p = g_real_dlsym(h, name);
			dlclose(h);
		}
	}
	return p;
}

/* The real function `id`, found the first time it is called. */
static __attribute__((noinline)) void *resolve_real(int id)
{
	void *p = find_next(g_names[id]);
	if (p)
		__atomic_store_n(&g_real[id], p, __ATOMIC_RELEASE);
	return p;
}

/* Known from dlsym or an earlier call, or resolved now. */
static inline void *real_function(int id)
{
	void *p = __atomic_load_n(&g_real[id], __ATOMIC_ACQUIRE);
	return LIKELY(p != NULL) ? p : resolve_real(id);
}

/* ---- the wrappers ---------------------------------------------------------------------------- */

/* A counted call forwards with a tail call; a timed one reads the clock around it. */
#define WRAP(ID, RET, NOT_FOUND, NAME, PARAMS, ARGS)                                     \
	EXPORT RET NAME PARAMS                                                            \
	{                                                                                 \
		typedef RET(*real_t) PARAMS;                                              \
		real_t real = (real_t)real_function(ID);                                 \
		if (UNLIKELY(!real))                                                      \
			return NOT_FOUND;                                                 \
		if (!__atomic_load_n(&g_enabled, __ATOMIC_RELAXED))                      \
			return real ARGS;                                                 \
		if (!((g_timed_mask >> (ID)) & 1)) {                                      \
			count(ID);                                                        \
			return real ARGS;                                                 \
		}                                                                         \
		uint64_t t0 = now_ns();                                                   \
		RET r = real ARGS;                                                        \
		record(ID, r != 0, now_ns() - t0);                                        \
		return r;                                                                 \
	}
#define DRV(ID, NAME, PARAMS, ARGS) WRAP(ID, CUresult, CUDA_ERROR_NOT_FOUND, NAME, PARAMS, ARGS)

DRV(0, cuLaunchKernel,
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
     unsigned int bz, unsigned int shared, CUstream stream, void **params, void **extra),
    (f, gx, gy, gz, bx, by, bz, shared, stream, params, extra))
DRV(1, cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **params, void **extra),
    (config, f, params, extra))
DRV(2, cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream), (dst, src, bytes, stream))
DRV(3, cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream),
    (dst, src, bytes, stream))
DRV(4, cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t bytes, CUstream stream), (dst, src, bytes, stream))
DRV(5, cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream),
    (dst, src, bytes, stream))
DRV(6, cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t bytes), (dst, src, bytes))
DRV(7, cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t bytes), (dst, src, bytes))
DRV(8, cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t bytes), (dst, src, bytes))
DRV(9, cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t bytes), (dst, src, bytes))
DRV(10, cuStreamSynchronize, (CUstream stream), (stream))
DRV(11, cuCtxSynchronize, (void), ())
DRV(12, cuEventSynchronize, (CUevent event), (event))
DRV(13, cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytes), (dptr, bytes))
DRV(14, cuMemFree_v2, (CUdeviceptr dptr), (dptr))
WRAP(15, cudaError_t, cudaErrorSymbolNotFound, cudaLaunchKernel,
     (const void *func, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream),
     (func, grid, block, args, shared, stream))

#define ADDRESS_OF(id, sync, name) (void *)name,
static void *const g_wrappers[MSC_NFN] = { MSC_WRAPPED(ADDRESS_OF) };

/* ---- cuGetProcAddress ----------------------------------------------------------------------- */

/* The CUDA runtime (>= 11.3) gets every driver function from cuGetProcAddress, by base name and
 * version ("cuMemFree", 3020 -> cuMemFree_v2): a pointer it returns that is one of the wrapped
 * functions of the library it came from becomes the wrapper. Compared by address, so the
 * versioned names need no table here. */
static void wrap_proc_address(void **pfn)
{
	Dl_info where;
	if (!pfn || !*pfn || !dladdr(*pfn, &where) || !where.dli_fname)
		return;
	void *h = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return;
	for (int i = 0; i < MSC_NFN; ++i)
		if (g_real_dlsym(h, g_names[i]) == *pfn) {
			__atomic_store_n(&g_real[i], *pfn, __ATOMIC_RELEASE);
			*pfn = g_wrappers[i];
			break;
		}
	dlclose(h);
}

#undef cuGetProcAddress
typedef CUresult (*proc_address_v2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*proc_address_v1_t)(const char *, void **, int, cuuint64_t);
enum { GPA_V1, GPA_V2, GPA_COUNT };
static const char *const g_gpa_names[GPA_COUNT] = { "cuGetProcAddress", "cuGetProcAddress_v2" };
static void *g_gpa_real[GPA_COUNT];

static void *real_proc_address(int which)
{
	void *p = __atomic_load_n(&g_gpa_real[which], __ATOMIC_ACQUIRE);
	if (p)
		return p;
	p = find_next(g_gpa_names[which]);
	if (p)
		__atomic_store_n(&g_gpa_real[which], p, __ATOMIC_RELEASE);
	return p;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status)
{
	proc_address_v2_t real = (proc_address_v2_t)real_proc_address(GPA_V2);
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = real(symbol, pfn, cudaVersion, flags, status);
	if (r == CUDA_SUCCESS)
		wrap_proc_address(pfn);
	return r;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	proc_address_v1_t real = (proc_address_v1_t)real_proc_address(GPA_V1);
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = real(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS)
		wrap_proc_address(pfn);
	return r;
}

static void *const g_gpa_wrappers[GPA_COUNT] = { (void *)cuGetProcAddress, (void *)cuGetProcAddress_v2 };

/* RTLD_NEXT for `caller`: the real dlsym would search after this library instead (it takes the
 * caller from its return address), and another preloaded library asking for its own next
 * definition would get itself back. So: the first object after the caller's, in load order, that
 * defines `name` itself. */
struct next_search {
	const char *name;
	ElfW(Addr) caller_bias; /* objects are told apart by load bias (l_addr == dlpi_addr): a
				 * non-PIE program's mapping starts at its link address, its bias is 0 */
	int after_caller;
	void *found;
};

/* The load bias of the object that holds `p`, or -1 when it is in none. */
static int bias_of(const void *p, ElfW(Addr) *bias)
{
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1(p, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return -1;
	*bias = lm->l_addr;
	return 0;
}

static int search_next(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct next_search *s = data;
	if (!s->after_caller) {
		s->after_caller = info->dlpi_addr == s->caller_bias;
		return 0;
	}
	if (!info->dlpi_name || !info->dlpi_name[0])
		return 0;
	void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	void *p = g_real_dlsym(h, s->name);
	ElfW(Addr) bias;
	/* dlsym(h) also searches h's dependencies: keep only a definition in this object. */
	if (p && bias_of(p, &bias) == 0 && bias == info->dlpi_addr)
		s->found = p;
	dlclose(h);
	return s->found != NULL;
}

static void *next_after(const void *caller, const char *name)
{
	ElfW(Addr) bias;
	if (bias_of(caller, &bias) != 0)
		return NULL;
	struct next_search s = { name, bias, 0, NULL };
	dl_iterate_phdr(search_next, &s);
	return s.found;
}

/* dlsym of a wrapped function returns the wrapper and remembers the real one. */
EXPORT void *dlsym(void *handle, const char *name)
{
	find_real_dlsym();
	void *(*real)(void *, const char *) = __atomic_load_n(&g_real_dlsym, __ATOMIC_ACQUIRE);
	if (!real)
		return NULL;
	void *p = handle == RTLD_NEXT ? next_after(__builtin_return_address(0), name) : real(handle, name);
	if (!p || name[0] != 'c' || name[1] != 'u') /* not ours: cu* and cuda* only */
		return p;
	for (int i = 0; i < MSC_NFN; ++i)
		if (strcmp(name, g_names[i]) == 0) {
			if (p == g_wrappers[i])
				return p;
			__atomic_store_n(&g_real[i], p, __ATOMIC_RELEASE);
			return g_wrappers[i];
		}
	for (int i = 0; i < GPA_COUNT; ++i)
		if (strcmp(name, g_gpa_names[i]) == 0) {
			if (p == g_gpa_wrappers[i])
				return p;
			__atomic_store_n(&g_gpa_real[i], p, __ATOMIC_RELEASE);
			return g_gpa_wrappers[i];
		}
	return p;
}
