/* A fake CUDA driver for the cuda backend's tests. Exports cuGetProcAddress_v2 (everything else is
 * reached through it, as the backend does) and counters the tests read with dlsym.
 * Knobs (read at cuInit):
 *   FAKE_CUDA_DEVICES (1)  FAKE_CUDA_SMS (132)  FAKE_CUDA_MIN_PARTITION (8)  FAKE_CUDA_ALIGNMENT (8)
 *   FAKE_CUDA_NO_GREEN=1   green-context entry points are missing (driver < 12.4)
 *   FAKE_CUDA_FAIL=<name>  that entry point returns CUDA_ERROR_OUT_OF_MEMORY once
 *   FAKE_CUDA_FAIL_AFTER=<n> lets the first n calls succeed before that one failure
 *   FAKE_CUDA_INIT=<code>  cuInit returns this code */
#include <cuda.h>

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int devices = 1, sms = 132, minPartition = 8, alignment = 8, noGreen = 0, initCode = 0;
static const char *failName = NULL;
static int failAfter = 0;
static int liveGreen = 0, liveStreams = 0, livePools = 0, lastPriority = 99, lastGreenSms = 0;
static unsigned long long lastPoolMax = 0;

EXPORT void fakeCudaCounters(int *green, int *streams, int *pools, int *priority, int *greenSms) {
  *green = liveGreen, *streams = liveStreams, *pools = livePools, *priority = lastPriority, *greenSms = lastGreenSms;
}
EXPORT unsigned long long fakeCudaLastPoolMax(void) { return lastPoolMax; }

static int envInt(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

static int failing(const char *name) {
  if (!failName || strcmp(failName, name) != 0)
    return 0;
  if (failAfter > 0) {
    --failAfter;
    return 0;
  }
  failName = NULL;
  return 1;
}
#define FAIL_IF(name)                                                                                        \
  if (failing(name))                                                                                         \
  return CUDA_ERROR_OUT_OF_MEMORY

static CUresult fInit(unsigned flags) {
  (void)flags;
  devices = envInt("FAKE_CUDA_DEVICES", 1);
  sms = envInt("FAKE_CUDA_SMS", 132);
  minPartition = envInt("FAKE_CUDA_MIN_PARTITION", 8);
  alignment = envInt("FAKE_CUDA_ALIGNMENT", 8);
  noGreen = envInt("FAKE_CUDA_NO_GREEN", 0);
  initCode = envInt("FAKE_CUDA_INIT", 0);
  failName = getenv("FAKE_CUDA_FAIL");
  failAfter = envInt("FAKE_CUDA_FAIL_AFTER", 0);
  return (CUresult)initCode;
}
static CUresult fDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
static CUresult fGetErrorName(CUresult rc, const char **name) {
  switch (rc) {
  case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}
static CUresult fDeviceGetCount(int *n) { *n = devices; return CUDA_SUCCESS; }
static CUresult fDeviceGet(CUdevice *d, int i) {
  if (i < 0 || i >= devices) return CUDA_ERROR_INVALID_DEVICE;
  *d = i;
  return CUDA_SUCCESS;
}
static CUresult fDeviceGetByPCIBusId(CUdevice *d, const char *bus) {
  /* "0000:0X:00.0" is device X-1 */
  size_t n = strlen(bus);
  if (n < 7) return CUDA_ERROR_INVALID_DEVICE;
  int i = (bus[n - 6] - '0') - 1;
  return fDeviceGet(d, i);
}
static CUresult fDeviceGetPCIBusId(char *out, int len, CUdevice d) {
  char bus[] = "0000:01:00.0";
  bus[6] = (char)('1' + d);
  strncpy(out, bus, (size_t)len);
  return CUDA_SUCCESS;
}
static CUresult fDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  FAIL_IF("cuDeviceGetAttribute");
  if (d < 0 || d >= devices) return CUDA_ERROR_INVALID_DEVICE;
  *v = a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? sms : 1;
  return CUDA_SUCCESS;
}
static CUresult fDeviceTotalMem(size_t *b, CUdevice d) { (void)d; *b = (size_t)80 << 30; return CUDA_SUCCESS; }
static int primary[8];
static CUresult fPrimaryRetain(CUcontext *c, CUdevice d) { ++primary[d]; *c = (CUcontext)(&primary[d]); return CUDA_SUCCESS; }
static CUresult fPrimaryRelease(CUdevice d) { --primary[d]; return CUDA_SUCCESS; }
static CUresult fPush(CUcontext c) { (void)c; return CUDA_SUCCESS; }
static CUresult fPop(CUcontext *c) { *c = NULL; return CUDA_SUCCESS; }
static CUresult fPriorityRange(int *least, int *greatest) { *least = 0, *greatest = -5; return CUDA_SUCCESS; }
static CUresult fMemGetInfo(size_t *free, size_t *total) { *total = (size_t)80 << 30, *free = (size_t)70 << 30; return CUDA_SUCCESS; }
static CUresult fStreamDestroy(CUstream s) { free(s); --liveStreams; return CUDA_SUCCESS; }
static CUresult fPoolCreate(CUmemoryPool *p, const CUmemPoolProps *props) {
  FAIL_IF("cuMemPoolCreate");
  lastPoolMax = props->maxSize;
  *p = (CUmemoryPool)malloc(8);
  ++livePools;
  return CUDA_SUCCESS;
}
static CUresult fPoolDestroy(CUmemoryPool p) { free(p); --livePools; return CUDA_SUCCESS; }
static CUresult fPoolSet(CUmemoryPool p, CUmemPool_attribute a, void *v) { (void)p, (void)a, (void)v; return CUDA_SUCCESS; }
static CUresult fPoolGet(CUmemoryPool p, CUmemPool_attribute a, void *v) { (void)p, (void)a; *(cuuint64_t *)v = 0; return CUDA_SUCCESS; }

static CUresult fGetDevResource(CUdevice d, CUdevResource *r, CUdevResourceType t) {
  if (t != CU_DEV_RESOURCE_TYPE_SM || d < 0 || d >= devices) return CUDA_ERROR_INVALID_VALUE;
  memset(r, 0, sizeof *r);
  r->type = CU_DEV_RESOURCE_TYPE_SM;
  r->sm.smCount = (unsigned)sms;
  r->sm.minSmPartitionSize = (unsigned)minPartition;
  r->sm.smCoscheduledAlignment = (unsigned)alignment;
  return CUDA_SUCCESS;
}
static CUresult fSplit(CUdevResource *result, unsigned *nb, const CUdevResource *in, CUdevResource *rest,
                       unsigned flags, unsigned minCount) {
  (void)flags;
  FAIL_IF("cuDevSmResourceSplitByCount");
  unsigned g = minCount < (unsigned)minPartition ? (unsigned)minPartition : minCount;
  g = (g + (unsigned)alignment - 1) / (unsigned)alignment * (unsigned)alignment;
  unsigned n = in->sm.smCount / g;
  if (result && *nb < n) n = *nb;
  *nb = n;
  if (!result) return CUDA_SUCCESS;
  for (unsigned i = 0; i < n; ++i) {
    result[i] = *in;
    result[i].sm.smCount = g;
  }
  if (rest) {
    *rest = *in;
    rest->sm.smCount = in->sm.smCount - n * g;
  }
  return CUDA_SUCCESS;
}
struct Desc { unsigned sms; };
static CUresult fGenerateDesc(CUdevResourceDesc *out, CUdevResource *r, unsigned n) {
  FAIL_IF("cuDevResourceGenerateDesc");
  struct Desc *d = malloc(sizeof *d);
  d->sms = 0;
  for (unsigned i = 0; i < n; ++i) d->sms += r[i].sm.smCount;
  *out = (CUdevResourceDesc)d; /* leaked like the driver's (descriptors have no destroy call) */
  return CUDA_SUCCESS;
}
static CUresult fGreenCreate(CUgreenCtx *g, CUdevResourceDesc desc, CUdevice d, unsigned flags) {
  (void)d;
  FAIL_IF("cuGreenCtxCreate");
  if (!(flags & CU_GREEN_CTX_DEFAULT_STREAM)) return CUDA_ERROR_INVALID_VALUE;
  struct Desc *copy = malloc(sizeof *copy);
  *copy = *(struct Desc *)desc;
  lastGreenSms = (int)copy->sms;
  *g = (CUgreenCtx)copy;
  ++liveGreen;
  return CUDA_SUCCESS;
}
static CUresult fGreenDestroy(CUgreenCtx g) { free(g); --liveGreen; return CUDA_SUCCESS; }
static CUresult fCtxFromGreen(CUcontext *c, CUgreenCtx g) { *c = (CUcontext)g; return CUDA_SUCCESS; }
static CUresult fGreenStream(CUstream *s, CUgreenCtx g, unsigned flags, int priority) {
  (void)g, (void)flags;
  FAIL_IF("cuGreenCtxStreamCreate");
  lastPriority = priority;
  *s = (CUstream)malloc(8);
  ++liveStreams;
  return CUDA_SUCCESS;
}

struct Entry { const char *name; void *fn; int green; };
static const struct Entry table[] = {
  {"cuInit", (void *)fInit, 0}, {"cuDriverGetVersion", (void *)fDriverGetVersion, 0},
  {"cuGetErrorName", (void *)fGetErrorName, 0}, {"cuDeviceGetCount", (void *)fDeviceGetCount, 0},
  {"cuDeviceGet", (void *)fDeviceGet, 0}, {"cuDeviceGetByPCIBusId", (void *)fDeviceGetByPCIBusId, 0},
  {"cuDeviceGetPCIBusId", (void *)fDeviceGetPCIBusId, 0}, {"cuDeviceGetAttribute", (void *)fDeviceGetAttribute, 0},
  {"cuDeviceTotalMem", (void *)fDeviceTotalMem, 0}, {"cuDevicePrimaryCtxRetain", (void *)fPrimaryRetain, 0},
  {"cuDevicePrimaryCtxRelease", (void *)fPrimaryRelease, 0}, {"cuCtxPushCurrent", (void *)fPush, 0},
  {"cuCtxPopCurrent", (void *)fPop, 0}, {"cuCtxGetStreamPriorityRange", (void *)fPriorityRange, 0},
  {"cuMemGetInfo", (void *)fMemGetInfo, 0}, {"cuStreamDestroy", (void *)fStreamDestroy, 0},
  {"cuMemPoolCreate", (void *)fPoolCreate, 0}, {"cuMemPoolDestroy", (void *)fPoolDestroy, 0},
  {"cuMemPoolSetAttribute", (void *)fPoolSet, 0}, {"cuMemPoolGetAttribute", (void *)fPoolGet, 0},
  {"cuDeviceGetDevResource", (void *)fGetDevResource, 1}, {"cuDevSmResourceSplitByCount", (void *)fSplit, 1},
  {"cuDevResourceGenerateDesc", (void *)fGenerateDesc, 1}, {"cuGreenCtxCreate", (void *)fGreenCreate, 1},
  {"cuGreenCtxDestroy", (void *)fGreenDestroy, 1}, {"cuCtxFromGreenCtx", (void *)fCtxFromGreen, 1},
  {"cuGreenCtxStreamCreate", (void *)fGreenStream, 1},
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) {
  (void)version, (void)flags;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (strcmp(table[i].name, symbol) == 0 && !(table[i].green && getenv("FAKE_CUDA_NO_GREEN"))) {
      *pfn = table[i].fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *pfn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
