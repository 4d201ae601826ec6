// A fake NVML (libnvidia-ml.so.1) for the health sampler's tests, on machines without a GPU: the
// GPUs and their memory health are read from the file $MSC_FAKE_NVML_STATE at nvmlInit_v2 and again
// at each handle lookup (a process initialises NVML once; the test changes the file between looks),
// one line a GPU:
//   PCI_BUS_ID ECC_CORRECTED ECC_UNCORRECTED RETIREMENT_PENDING REMAP_PENDING REMAP_FAILED
// a counter '-' when the GPU does not support ECC (NVML_ERROR_NOT_SUPPORTED). Only the calls the
// sampler makes exist.
//
// Xid events: $MSC_FAKE_NVML_XIDS names a file of lines "PCI_BUS_ID XID", each an event that
// happens when the line is first read. A wait re-reads the file and delivers the next line not yet
// consumed (kept in this process, per file, so a test appends lines between looks), to a set the
// GPU is registered to; a line of a GPU registered nowhere is consumed and lost, as NVML loses an
// event that no set waited for. $MSC_FAKE_NVML_XID_UNSUPPORTED lists PCI bus ids (comma-separated)
// whose registration fails with NVML_ERROR_NOT_SUPPORTED, as on consumer GPUs.
// FAKE_NVML_EVENTS (compile time) picks the event API exported: 2 (default) nvmlEventSetWait_v2 and
// nvmlEventSetWait, 1 only nvmlEventSetWait (a driver before MIG), 0 none (a driver without events).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXPORT __attribute__((visibility("default")))
enum { kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6, kTimeout = 10 };
#ifndef FAKE_NVML_EVENTS
#define FAKE_NVML_EVENTS 2
#endif

struct Gpu {
  char pci[64];
  long long corrected, uncorrected; // -1: not supported
  int retirementPending, remapPending, remapFailed;
};
static struct Gpu gpus[16];
static int count = -1;

static long long counter(const char *text) { return strcmp(text, "-") == 0 ? -1 : atoll(text); }

static int load(void) {
  const char *path = getenv("MSC_FAKE_NVML_STATE");
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f)
    return kUninitialized;
  count = 0;
  char corrected[32], uncorrected[32];
  while (count < 16 && fscanf(f, "%63s %31s %31s %d %d %d", gpus[count].pci, corrected, uncorrected,
                              &gpus[count].retirementPending, &gpus[count].remapPending, &gpus[count].remapFailed) == 6) {
    gpus[count].corrected = counter(corrected);
    gpus[count].uncorrected = counter(uncorrected);
    ++count;
  }
  fclose(f);
  return kSuccess;
}

EXPORT int nvmlInit_v2(void) { return load(); }

EXPORT int nvmlShutdown(void) {
  count = -1;
  return kSuccess;
}

static struct Gpu *gpuOf(void *device) {
  struct Gpu *g = (struct Gpu *)device;
  return count >= 0 && g >= gpus && g < gpus + count ? g : NULL;
}

EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **device) {
  if (count < 0 || load() != kSuccess)
    return kUninitialized;
  for (int i = 0; i < count; ++i)
    if (strcasecmp(gpus[i].pci, pci) == 0) {
      *device = &gpus[i];
      return kSuccess;
    }
  return kNotFound;
}

EXPORT int nvmlDeviceGetTotalEccErrors(void *device, int errorType, int counterType, unsigned long long *out) {
  struct Gpu *g = gpuOf(device);
  if (!g || counterType != 0)
    return g ? kNotSupported : kInvalidArgument;
  long long v = errorType == 0 ? g->corrected : g->uncorrected;
  if (v < 0)
    return kNotSupported;
  *out = (unsigned long long)v;
  return kSuccess;
}

EXPORT int nvmlDeviceGetRetiredPagesPendingStatus(void *device, int *pending) {
  struct Gpu *g = gpuOf(device);
  if (!g)
    return kInvalidArgument;
  *pending = g->retirementPending;
  return kSuccess;
}

EXPORT int nvmlDeviceGetRemappedRows(void *device, unsigned *corrected, unsigned *uncorrected, unsigned *pending,
                                     unsigned *failed) {
  struct Gpu *g = gpuOf(device);
  if (!g)
    return kInvalidArgument;
  *corrected = 0;
  *uncorrected = 0;
  *pending = (unsigned)g->remapPending;
  *failed = (unsigned)g->remapFailed;
  return kSuccess;
}

#if FAKE_NVML_EVENTS > 0
static const unsigned long long kEventTypeXidCriticalError = 0x0000000000000008ULL;

// nvmlEventData_t; nvmlEventSetWait (before _v2) fills the first three fields only.
struct EventData {
  void *device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};

struct EventSet {
  unsigned long long types[16]; // per GPU, the event types registered
};

static char consumedPath[4096];
static long consumed; // lines of consumedPath already delivered (or lost)

EXPORT int nvmlEventSetCreate(struct EventSet **set) {
  if (count < 0)
    return kUninitialized;
  if (!set)
    return kInvalidArgument;
  *set = (struct EventSet *)calloc(1, sizeof(struct EventSet));
  return *set ? kSuccess : kUninitialized;
}

EXPORT int nvmlEventSetFree(struct EventSet *set) {
  free(set);
  return kSuccess;
}

static int unsupported(const char *pci) {
  const char *list = getenv("MSC_FAKE_NVML_XID_UNSUPPORTED");
  size_t n = strlen(pci);
  for (const char *at = list; at && *at;) {
    if (strncasecmp(at, pci, n) == 0 && (at[n] == ',' || at[n] == '\0'))
      return 1;
    at = strchr(at, ',');
    if (at)
      ++at;
  }
  return 0;
}

EXPORT int nvmlDeviceRegisterEvents(void *device, unsigned long long types, struct EventSet *set) {
  struct Gpu *g = gpuOf(device);
  if (!g || !set)
    return kInvalidArgument;
  if (unsupported(g->pci))
    return kNotSupported;
  set->types[g - gpus] |= types;
  return kSuccess;
}

// The next line of the Xid file not consumed yet, for a GPU registered to `set`; the wait never
// blocks (a test has nothing to wait for).
static int waitFor(struct EventSet *set, struct EventData *data, int withInstances) {
  if (count < 0)
    return kUninitialized;
  if (!set || !data)
    return kInvalidArgument;
  const char *path = getenv("MSC_FAKE_NVML_XIDS");
  if (!path)
    return kTimeout;
  if (strncmp(consumedPath, path, sizeof consumedPath) != 0) {
    snprintf(consumedPath, sizeof consumedPath, "%s", path);
    consumed = 0;
  }
  FILE *f = fopen(path, "r");
  if (!f)
    return kTimeout;
  char pci[64];
  unsigned long long xid = 0;
  int result = kTimeout;
  for (long line = 0; result == kTimeout && fscanf(f, "%63s %llu", pci, &xid) == 2; ++line) {
    if (line < consumed)
      continue;
    consumed = line + 1;
    for (int i = 0; i < count; ++i)
      if (strcasecmp(gpus[i].pci, pci) == 0 && (set->types[i] & kEventTypeXidCriticalError)) {
        data->device = &gpus[i];
        data->eventType = kEventTypeXidCriticalError;
        data->eventData = xid;
        if (withInstances) {
          data->gpuInstanceId = 0xFFFFFFFFu;
          data->computeInstanceId = 0xFFFFFFFFu;
        }
        result = kSuccess;
        break;
      }
  }
  fclose(f);
  return result;
}

EXPORT int nvmlEventSetWait(struct EventSet *set, struct EventData *data, unsigned timeoutMs) {
  (void)timeoutMs;
  return waitFor(set, data, 0);
}
#endif

#if FAKE_NVML_EVENTS > 1
EXPORT int nvmlEventSetWait_v2(struct EventSet *set, struct EventData *data, unsigned timeoutMs) {
  (void)timeoutMs;
  return waitFor(set, data, 1);
}
#endif
