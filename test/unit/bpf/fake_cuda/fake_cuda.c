/* A stand-in for libcuda.so.1 (SONAME libcuda.so.1) for the tracing tests: the same entry points
 * with the real signatures from cuda.h, in front of an emulated device with one in-order queue.
 *   - launches and async copies from pinned memory enqueue work and return at once;
 *   - async copies from pageable memory (not from cuMemAllocHost) first wait for the queue to drain,
 *     as the real driver's staging does: an implicit synchronisation;
 *   - synchronous copies and cu*Synchronize wait for the queue.
 * Environment: FAKECUDA_KERNEL_US (device time per launch, default 200), FAKECUDA_CALL_NS (host cost
 * of every call, busy-waited, default 0). */
#define _GNU_SOURCE
#include <cuda.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_busy_until; /* CLOCK_MONOTONIC ns when the emulated queue is empty */
static uint64_t g_kernel_ns = 200000;
static uint64_t g_call_ns;
static uint64_t g_next_dptr = 0x10000000;

struct range { uintptr_t begin, end; };
static struct range g_pinned[64];
static int g_npinned;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((constructor)) static void fake_init(void)
{
	const char *k = getenv("FAKECUDA_KERNEL_US"), *c = getenv("FAKECUDA_CALL_NS");
	if (k)
		g_kernel_ns = strtoull(k, NULL, 10) * 1000;
	if (c)
		g_call_ns = strtoull(c, NULL, 10);
}

static void host_cost(void)
{
	if (!g_call_ns)
		return;
	uint64_t end = now_ns() + g_call_ns;
	while (now_ns() < end)
		;
}

static void enqueue(uint64_t ns)
{
	pthread_mutex_lock(&g_lock);
	uint64_t now = now_ns();
	g_busy_until = (g_busy_until > now ? g_busy_until : now) + ns;
	pthread_mutex_unlock(&g_lock);
}

static void drain(void)
{
	pthread_mutex_lock(&g_lock);
	uint64_t until = g_busy_until;
	pthread_mutex_unlock(&g_lock);
	if (until <= now_ns())
		return;
	struct timespec ts = { (time_t)(until / 1000000000ull), (long)(until % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

static int is_pinned(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	pthread_mutex_lock(&g_lock);
	for (int i = 0; i < g_npinned; ++i)
		if (a >= g_pinned[i].begin && a < g_pinned[i].end) {
			pthread_mutex_unlock(&g_lock);
			return 1;
		}
	pthread_mutex_unlock(&g_lock);
	return 0;
}

/* Device time of a copy: 1 ns per 16 bytes (16 GB/s). */
static uint64_t copy_ns(size_t bytes) { return bytes / 16; }

EXPORT CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	host_cost();
	void *p = aligned_alloc(4096, (bytesize + 4095) & ~(size_t)4095);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&g_lock);
	if (g_npinned < 64)
		g_pinned[g_npinned++] = (struct range){ (uintptr_t)p, (uintptr_t)p + bytesize };
	pthread_mutex_unlock(&g_lock);
	*pp = p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	pthread_mutex_lock(&g_lock);
	for (int i = 0; i < g_npinned; ++i)
		if (g_pinned[i].begin == (uintptr_t)p)
			g_pinned[i] = g_pinned[--g_npinned];
	pthread_mutex_unlock(&g_lock);
	free(p);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
			       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
			       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
	(void)gridDimX; (void)gridDimY; (void)gridDimZ; (void)blockDimX; (void)blockDimY; (void)blockDimZ;
	(void)sharedMemBytes; (void)hStream; (void)kernelParams; (void)extra;
	host_cost();
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	enqueue(g_kernel_ns);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	(void)kernelParams; (void)extra;
	host_cost();
	if (!f || !config)
		return CUDA_ERROR_INVALID_VALUE;
	enqueue(g_kernel_ns);
	return CUDA_SUCCESS;
}

static CUresult async_copy(const void *host, size_t bytes)
{
	host_cost();
	if (host && !is_pinned(host))
		drain(); /* pageable: staged synchronously after all earlier work */
	enqueue(copy_ns(bytes));
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	(void)dst; (void)src; (void)hStream;
	return async_copy(NULL, ByteCount);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
	(void)dstDevice; (void)hStream;
	return async_copy(srcHost, ByteCount);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	(void)srcDevice; (void)hStream;
	return async_copy(dstHost, ByteCount);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	(void)dstDevice; (void)srcDevice; (void)hStream;
	return async_copy(NULL, ByteCount);
}

static CUresult sync_copy(size_t bytes)
{
	host_cost();
	enqueue(copy_ns(bytes));
	drain();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) { (void)dst; (void)src; return sync_copy(ByteCount); }
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) { (void)dstDevice; (void)srcHost; return sync_copy(ByteCount); }
EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) { (void)dstHost; (void)srcDevice; return sync_copy(ByteCount); }
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) { (void)dstDevice; (void)srcDevice; return sync_copy(ByteCount); }

EXPORT CUresult cuStreamSynchronize(CUstream hStream) { (void)hStream; host_cost(); drain(); return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSynchronize(void) { host_cost(); drain(); return CUDA_SUCCESS; }
EXPORT CUresult cuEventSynchronize(CUevent hEvent) { (void)hEvent; host_cost(); drain(); return CUDA_SUCCESS; }

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	host_cost();
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	*dptr = g_next_dptr;
	g_next_dptr += (bytesize + 255) & ~(size_t)255;
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

#if defined(FAKECUDA_HOT_ENTRY) || defined(FAKECUDA_NOP5_ENTRY)
/* Benchmark variants (bench/trace): cuMemFree_v2 starts with a chosen instruction and jumps to the
 * body, to price uprobes on an entry the kernel must single-step out of line (the hot entry:
 * `add 0x8(%rsp),%r9d`, as -O2 code can start with; r9 is a scratch register here) or on a 5-byte
 * nop, which kernels >= 6.18 can turn into a call to a uprobe trampoline. */
#ifdef FAKECUDA_HOT_ENTRY
#define FAKECUDA_ENTRY "\tadd 0x8(%rsp),%r9d\n"
#else
#define FAKECUDA_ENTRY "\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
#endif
__attribute__((used)) CUresult fake_mem_free(CUdeviceptr dptr) { (void)dptr; host_cost(); return CUDA_SUCCESS; }
__asm__(".globl cuMemFree_v2\n"
	".type cuMemFree_v2, @function\n"
	"cuMemFree_v2:\n" FAKECUDA_ENTRY
	"\tjmp fake_mem_free\n"
	".size cuMemFree_v2, . - cuMemFree_v2\n");
#else
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { (void)dptr; host_cost(); return CUDA_SUCCESS; }
#endif

/* cuGetProcAddress (v2) as the CUDA runtime uses it: a base name and a version ("cuMemFree", 3020
 * -> cuMemFree_v2) or an exact name. The addresses bind inside this library (it links with
 * -Bsymbolic-functions, as the real driver's do): a preloaded library defining the same names does
 * not change what this returns. */
#undef cuGetProcAddress
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status)
{
	(void)flags;
	static const struct { const char *name; void *fn; } table[] = {
		{ "cuLaunchKernel", (void *)cuLaunchKernel },
		{ "cuLaunchKernelEx", (void *)cuLaunchKernelEx },
		{ "cuMemcpyAsync", (void *)cuMemcpyAsync },
		{ "cuMemcpyHtoDAsync_v2", (void *)cuMemcpyHtoDAsync_v2 },
		{ "cuMemcpyDtoHAsync_v2", (void *)cuMemcpyDtoHAsync_v2 },
		{ "cuMemcpyDtoDAsync_v2", (void *)cuMemcpyDtoDAsync_v2 },
		{ "cuMemcpy", (void *)cuMemcpy },
		{ "cuMemcpyHtoD_v2", (void *)cuMemcpyHtoD_v2 },
		{ "cuMemcpyDtoH_v2", (void *)cuMemcpyDtoH_v2 },
		{ "cuMemcpyDtoD_v2", (void *)cuMemcpyDtoD_v2 },
		{ "cuStreamSynchronize", (void *)cuStreamSynchronize },
		{ "cuCtxSynchronize", (void *)cuCtxSynchronize },
		{ "cuEventSynchronize", (void *)cuEventSynchronize },
		{ "cuMemAlloc_v2", (void *)cuMemAlloc_v2 },
		{ "cuMemFree_v2", (void *)cuMemFree_v2 },
		{ "cuMemAllocHost_v2", (void *)cuMemAllocHost_v2 },
	};
	char versioned[64];
	snprintf(versioned, sizeof(versioned), "%s_v2", symbol);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); ++i)
		if (strcmp(table[i].name, symbol) == 0 || (cudaVersion >= 3020 && strcmp(table[i].name, versioned) == 0)) {
			*pfn = table[i].fn;
			if (status)
				*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}
