// dlopen of libcuda (kept mapped) and NVML, and cuGetProcAddress lookups.
#include "hal/CudaDriver.h"

#include <dlfcn.h>

namespace msc::hal {

namespace {
template <typename F> F sym(void *handle, const char *name) { return reinterpret_cast<F>(::dlsym(handle, name)); }
} // namespace

std::unique_ptr<CudaDriver> CudaDriver::open(const std::string &library, std::string &why) {
  std::unique_ptr<CudaDriver> d(new CudaDriver());
  d->library_ = library;
  d->handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!d->handle_) {
    why = "no " + library;
    if (const char *e = ::dlerror())
      why += std::string(" (") + e + ")";
    return nullptr;
  }
  d->getProc_ = sym<GetProcFn>(d->handle_, "cuGetProcAddress_v2");
  if (!d->getProc_) {
    why = library + " has no cuGetProcAddress_v2 (driver older than CUDA 12)";
    return nullptr;
  }
  return d;
}

CudaDriver::~CudaDriver() {
  if (handle_)
    ::dlclose(handle_); // a reference less; RTLD_NODELETE keeps the code mapped
}

void *CudaDriver::proc(const char *name, int version, CUresult *rc) const {
  void *fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  CUresult r = getProc_(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (rc)
    *rc = r;
  return r == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS ? fn : nullptr;
}

std::unique_ptr<Nvml> Nvml::open(const std::string &library) {
  std::unique_ptr<Nvml> n(new Nvml());
  n->handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!n->handle_)
    return nullptr;
  auto init = sym<int (*)()>(n->handle_, "nvmlInit_v2");
  n->byPciBusId = sym<decltype(n->byPciBusId)>(n->handle_, "nvmlDeviceGetHandleByPciBusId_v2");
  if (!init || !n->byPciBusId || init() != 0)
    return nullptr; // the destructor closes the library; nothing to shut down
  n->shutdown_ = sym<int (*)()>(n->handle_, "nvmlShutdown");
  n->temperature = sym<decltype(n->temperature)>(n->handle_, "nvmlDeviceGetTemperature");
  n->temperatureThreshold = sym<decltype(n->temperatureThreshold)>(n->handle_, "nvmlDeviceGetTemperatureThreshold");
  n->migMode = sym<decltype(n->migMode)>(n->handle_, "nvmlDeviceGetMigMode");
  n->utilization = sym<decltype(n->utilization)>(n->handle_, "nvmlDeviceGetUtilizationRates");
  n->memory = sym<decltype(n->memory)>(n->handle_, "nvmlDeviceGetMemoryInfo");
  n->totalEccErrors = sym<decltype(n->totalEccErrors)>(n->handle_, "nvmlDeviceGetTotalEccErrors");
  n->retiredPagesPending = sym<decltype(n->retiredPagesPending)>(n->handle_, "nvmlDeviceGetRetiredPagesPendingStatus");
  n->remappedRows = sym<decltype(n->remappedRows)>(n->handle_, "nvmlDeviceGetRemappedRows");
  n->eventSetCreate = sym<decltype(n->eventSetCreate)>(n->handle_, "nvmlEventSetCreate");
  n->registerEvents = sym<decltype(n->registerEvents)>(n->handle_, "nvmlDeviceRegisterEvents");
  n->eventSetFree = sym<decltype(n->eventSetFree)>(n->handle_, "nvmlEventSetFree");
  for (const char *wait : {"nvmlEventSetWait_v2", "nvmlEventSetWait"})
    if ((n->eventSetWait = sym<decltype(n->eventSetWait)>(n->handle_, wait))) {
      n->eventSetWaitName = wait;
      break;
    }
  return n;
}

Nvml::~Nvml() {
  if (shutdown_)
    shutdown_();
  if (handle_)
    ::dlclose(handle_);
}

} // namespace msc::hal
