// A fake NVML (libnvidia-ml.so.1) for the health sampler's tests, on machines without a GPU: the
// GPUs and their memory health are read from the file $MSC_FAKE_NVML_STATE at nvmlInit_v2 and again
// at each handle lookup (a process initialises NVML once; the test changes the file between looks),
// one line a GPU:
//   PCI_BUS_ID ECC_CORRECTED ECC_UNCORRECTED RETIREMENT_PENDING REMAP_PENDING REMAP_FAILED
// a counter '-' when the GPU does not support ECC (NVML_ERROR_NOT_SUPPORTED). Only the calls the
// sampler makes exist.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXPORT __attribute__((visibility("default")))
enum { kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6 };

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
