// The CUDA driver API and NVML, loaded with dlopen (the build never links either): the one loader of
// the topology probe (hal/GpuProbe.cpp) and of the executor's cuda GPU backend.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

namespace msc::hal {

// Driver entry points are looked up with cuGetProcAddress at the ABI the caller asks for.
class CudaDriver {
public:
  // Opens `library` (a soname or a path) and finds cuGetProcAddress_v2. nullptr with `why`:
  // "no libcuda.so.1 (dlerror)", "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)".
  // Once opened the library is never unloaded (RTLD_NODELETE): an initialised driver keeps threads
  // and exit handlers in the process.
  static std::unique_ptr<CudaDriver> open(const std::string &library, std::string &why);
  ~CudaDriver();
  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;

  const std::string &library() const { return library_; }
  // Entry point `name` at ABI `version` (e.g. 12000 for 12.0), or nullptr when the driver does not
  // have it; `rc` receives cuGetProcAddress's own result (CUDA_ERROR_STUB_LIBRARY on the toolkit stub).
  void *proc(const char *name, int version, CUresult *rc = nullptr) const;
  template <typename F> F proc(const char *name, int version = 12000, CUresult *rc = nullptr) const {
    return reinterpret_cast<F>(proc(name, version, rc));
  }

private:
  using GetProcFn = CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
  CudaDriver() = default;
  void *handle_ = nullptr;
  std::string library_;
  GetProcFn getProc_ = nullptr;
};

// NVML's few functions are declared here: its header is not part of the toolkit headers we build
// against.
class Nvml {
public:
  using Device = void *;
  struct Utilization {
    unsigned gpu, memory; // percent
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  // Opens and initialises NVML; nullptr when the library is missing or nvmlInit fails. nvmlShutdown
  // and dlclose when destroyed.
  static std::unique_ptr<Nvml> open(const std::string &library = "libnvidia-ml.so.1");
  ~Nvml();
  Nvml(const Nvml &) = delete;
  Nvml &operator=(const Nvml &) = delete;

  // Each returns NVML's status (0: success); the optional ones are null when the library lacks them.
  int (*byPciBusId)(const char *, Device *) = nullptr;
  int (*temperature)(Device, int sensor, unsigned *) = nullptr;          // sensor 0: the GPU die
  int (*temperatureThreshold)(Device, int kind, unsigned *) = nullptr;   // kind 1: slowdown
  int (*migMode)(Device, unsigned *current, unsigned *pending) = nullptr;
  int (*utilization)(Device, Utilization *) = nullptr;
  int (*memory)(Device, Memory *) = nullptr;
  // The memory's health (node health, health/Sampler.h). errorType 0 corrected, 1 uncorrected;
  // counterType 0 volatile (since the driver loaded), 1 aggregate (the device's life).
  int (*totalEccErrors)(Device, int errorType, int counterType, unsigned long long *) = nullptr;
  int (*retiredPagesPending)(Device, int *pending) = nullptr; // page retirement (before Ampere)
  int (*remappedRows)(Device, unsigned *corrected, unsigned *uncorrected, unsigned *pending,
                      unsigned *failed) = nullptr; // row remapping (Ampere and later)

  // The event API, for GPU Xid errors (node health, health/Sampler.h). Null when the library lacks
  // it; eventSetWait is nvmlEventSetWait_v2, or nvmlEventSetWait where the library is older (it
  // fills only the fields before gpuInstanceId, so EventData is zeroed before each wait).
  using EventSet = void *;
  struct EventData { // nvmlEventData_t
    Device device;
    unsigned long long eventType;
    unsigned long long eventData; // the Xid, for an Xid critical error (999: an Xid NVML does not know)
    unsigned gpuInstanceId;       // MIG instances the Xid is attributed to; 0xFFFFFFFF: none
    unsigned computeInstanceId;
  };
  static constexpr unsigned long long EventTypeXidCriticalError = 0x0000000000000008ULL;
  static constexpr int ErrorNotSupported = 3;
  static constexpr int ErrorTimeout = 10; // no event arrived within the wait
  int (*eventSetCreate)(EventSet *) = nullptr;
  int (*registerEvents)(Device, unsigned long long eventTypes, EventSet) = nullptr;
  int (*eventSetWait)(EventSet, EventData *, unsigned timeoutMs) = nullptr;
  int (*eventSetFree)(EventSet) = nullptr;
  const char *eventSetWaitName = nullptr; // the symbol eventSetWait was found as, for notes
  bool hasEvents() const { return eventSetCreate && registerEvents && eventSetWait && eventSetFree; }

private:
  Nvml() = default;
  void *handle_ = nullptr;
  int (*shutdown_)() = nullptr;
};

} // namespace msc::hal
