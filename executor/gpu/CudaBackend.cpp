// The `cuda` GPU backend: the driver API loaded with dlopen (hal/CudaDriver.h: the build never
// links libcuda) and every entry point looked up with cuGetProcAddress. Slices are green contexts
// carved from one split of the whole GPU into granules (so slices are disjoint: resources from
// separate splits would overlap), each with a prioritised stream and a memory pool capped at the
// plan's limit.
// Where green contexts are missing (driver < 12.4) or the plan asks for MPS, a slice is an MPS
// active-thread percentage the worker inherits.
//
// Green contexts belong to the process that creates them: the agent's contexts prove the split is
// possible and reserve the SMs in this backend's book-keeping; the worker gets the same numbers
// (MSCALE_GPU_SLICES) to create its own. Every CUresult becomes an error naming the call and the
// driver's error name (cuGetErrorName).
#include "executor/gpu/GpuBackends.h"
#include "executor/gpu/SliceMath.h"
#include "hal/CudaDriver.h"

#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

namespace msc::exec {
namespace {

using hal::Nvml;

std::string envOr(const char *name, const std::string &given, const char *fallback) {
  if (!given.empty())
    return given;
  const char *v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The driver entry points this backend uses. Green-context ones are null on drivers without them.
struct Driver {
  std::unique_ptr<hal::CudaDriver> lib;
  int version = 0;
#define MSC_CU_FN(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
  MSC_CU_FN(cuInit, unsigned)
  MSC_CU_FN(cuDriverGetVersion, int *)
  MSC_CU_FN(cuGetErrorName, CUresult, const char **)
  MSC_CU_FN(cuDeviceGetCount, int *)
  MSC_CU_FN(cuDeviceGet, CUdevice *, int)
  MSC_CU_FN(cuDeviceGetByPCIBusId, CUdevice *, const char *)
  MSC_CU_FN(cuDeviceGetPCIBusId, char *, int, CUdevice)
  MSC_CU_FN(cuDeviceGetAttribute, int *, CUdevice_attribute, CUdevice)
  MSC_CU_FN(cuDeviceTotalMem, size_t *, CUdevice)
  MSC_CU_FN(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)
  MSC_CU_FN(cuDevicePrimaryCtxRelease, CUdevice)
  MSC_CU_FN(cuCtxPushCurrent, CUcontext)
  MSC_CU_FN(cuCtxPopCurrent, CUcontext *)
  MSC_CU_FN(cuCtxGetStreamPriorityRange, int *, int *)
  MSC_CU_FN(cuMemGetInfo, size_t *, size_t *)
  MSC_CU_FN(cuStreamDestroy, CUstream)
  MSC_CU_FN(cuMemPoolCreate, CUmemoryPool *, const CUmemPoolProps *)
  MSC_CU_FN(cuMemPoolDestroy, CUmemoryPool)
  MSC_CU_FN(cuMemPoolSetAttribute, CUmemoryPool, CUmemPool_attribute, void *)
  MSC_CU_FN(cuMemPoolGetAttribute, CUmemoryPool, CUmemPool_attribute, void *)
  MSC_CU_FN(cuDeviceGetDevResource, CUdevice, CUdevResource *, CUdevResourceType)
  MSC_CU_FN(cuDevSmResourceSplitByCount, CUdevResource *, unsigned *, const CUdevResource *, CUdevResource *,
            unsigned, unsigned)
  MSC_CU_FN(cuDevResourceGenerateDesc, CUdevResourceDesc *, CUdevResource *, unsigned)
  MSC_CU_FN(cuGreenCtxCreate, CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned)
  MSC_CU_FN(cuGreenCtxDestroy, CUgreenCtx)
  MSC_CU_FN(cuCtxFromGreenCtx, CUcontext *, CUgreenCtx)
  MSC_CU_FN(cuGreenCtxStreamCreate, CUstream *, CUgreenCtx, unsigned, int)
#undef MSC_CU_FN

  bool green() const {
    return cuDeviceGetDevResource && cuDevSmResourceSplitByCount && cuDevResourceGenerateDesc && cuGreenCtxCreate &&
           cuGreenCtxDestroy && cuCtxFromGreenCtx && cuGreenCtxStreamCreate;
  }

  template <typename F> CUresult resolve(const char *name, F &fn, int want) {
    CUresult rc = CUDA_SUCCESS;
    if (void *p = lib->proc(name, want, &rc))
      fn = reinterpret_cast<F>(p);
    return rc;
  }

  std::string err(const char *call, CUresult rc) const {
    const char *name = nullptr;
    if (!cuGetErrorName || cuGetErrorName(rc, &name) != CUDA_SUCCESS || !name)
      name = "CUDA_ERROR_UNKNOWN";
    return std::string(call) + ": " + name + " (" + std::to_string(int(rc)) + ")";
  }
};

// Loads and initialises the driver; on failure says why in words a user can act on.
std::shared_ptr<Driver> loadDriver(const BackendOptions &options, CudaProbe &probe) {
  auto d = std::make_shared<Driver>();
  probe.library = envOr("MSCALE_CUDA_LIBRARY", options.cudaLibrary, "libcuda.so.1");
  d->lib = hal::CudaDriver::open(probe.library, probe.why);
  if (!d->lib)
    return nullptr;
  const std::string &library = probe.library;
  auto fail = [&](std::string why) -> std::shared_ptr<Driver> {
    probe.why = std::move(why);
    return nullptr;
  };
  CUresult rc = d->resolve("cuInit", d->cuInit, 12000);
  d->resolve("cuGetErrorName", d->cuGetErrorName, 12000);
  d->resolve("cuDriverGetVersion", d->cuDriverGetVersion, 12000);
  if (rc == CUDA_ERROR_STUB_LIBRARY)
    return fail("stub library (cuGetProcAddress: CUDA_ERROR_STUB_LIBRARY)");
  if (!d->cuInit)
    return fail(library + " has no cuInit");
  rc = d->cuInit(0);
  if (rc == CUDA_ERROR_STUB_LIBRARY)
    return fail("stub library (cuInit: CUDA_ERROR_STUB_LIBRARY)");
  if (rc == CUDA_ERROR_NO_DEVICE)
    return fail("no CUDA devices (cuInit: CUDA_ERROR_NO_DEVICE)");
  if (rc != CUDA_SUCCESS)
    return fail("driver did not initialise (" + d->err("cuInit", rc) + ")");
  if (d->cuDriverGetVersion)
    d->cuDriverGetVersion(&d->version);
  probe.driverVersion = d->version;
  // Ask for the ABI both we (the header) and the driver know.
  int want = std::min(d->version ? d->version : 12000, CUDA_VERSION);
#define MSC_RESOLVE(name) d->resolve(#name, d->name, want);
  MSC_RESOLVE(cuDeviceGetCount)
  MSC_RESOLVE(cuDeviceGet)
  MSC_RESOLVE(cuDeviceGetByPCIBusId)
  MSC_RESOLVE(cuDeviceGetPCIBusId)
  MSC_RESOLVE(cuDeviceGetAttribute)
  MSC_RESOLVE(cuDeviceTotalMem)
  MSC_RESOLVE(cuDevicePrimaryCtxRetain)
  MSC_RESOLVE(cuDevicePrimaryCtxRelease)
  MSC_RESOLVE(cuCtxPushCurrent)
  MSC_RESOLVE(cuCtxPopCurrent)
  MSC_RESOLVE(cuCtxGetStreamPriorityRange)
  MSC_RESOLVE(cuMemGetInfo)
  MSC_RESOLVE(cuStreamDestroy)
  MSC_RESOLVE(cuMemPoolCreate)
  MSC_RESOLVE(cuMemPoolDestroy)
  MSC_RESOLVE(cuMemPoolSetAttribute)
  MSC_RESOLVE(cuMemPoolGetAttribute)
  MSC_RESOLVE(cuDeviceGetDevResource)
  MSC_RESOLVE(cuDevSmResourceSplitByCount)
  MSC_RESOLVE(cuDevResourceGenerateDesc)
  MSC_RESOLVE(cuGreenCtxCreate)
  MSC_RESOLVE(cuGreenCtxDestroy)
  MSC_RESOLVE(cuCtxFromGreenCtx)
  MSC_RESOLVE(cuGreenCtxStreamCreate)
#undef MSC_RESOLVE
  for (auto [name, present] :
       {std::pair{"cuDeviceGetCount", d->cuDeviceGetCount != nullptr}, {"cuDeviceGet", d->cuDeviceGet != nullptr},
        {"cuDeviceGetAttribute", d->cuDeviceGetAttribute != nullptr},
        {"cuDevicePrimaryCtxRetain", d->cuDevicePrimaryCtxRetain != nullptr},
        {"cuDevicePrimaryCtxRelease", d->cuDevicePrimaryCtxRelease != nullptr},
        {"cuCtxPushCurrent", d->cuCtxPushCurrent != nullptr}, {"cuCtxPopCurrent", d->cuCtxPopCurrent != nullptr},
        {"cuStreamDestroy", d->cuStreamDestroy != nullptr}})
    if (!present)
      return fail(library + " has no " + name);
  int n = 0;
  rc = d->cuDeviceGetCount(&n);
  if (rc != CUDA_SUCCESS)
    return fail(d->err("cuDeviceGetCount", rc));
  if (n == 0)
    return fail("no CUDA devices");
  probe.devices = n;
  probe.greenContexts = d->green();
  probe.available = true;
  probe.why = "driver " + std::to_string(d->version / 1000) + "." + std::to_string(d->version % 1000 / 10) +
              ", " + std::to_string(n) + " device(s)" + (d->green() ? ", green contexts" : ", no green contexts (MPS)");
  return d;
}

class CudaBackend final : public GpuBackend {
public:
  CudaBackend(std::shared_ptr<Driver> driver, const std::string &nvmlPath)
      : d_(std::move(driver)), nvml_(Nvml::open(nvmlPath)) {}

  ~CudaBackend() override {
    std::vector<SliceId> ids;
    for (auto &[id, s] : slices_)
      ids.push_back(id);
    for (SliceId id : ids)
      destroySlice(id);
    for (auto &[ordinal, dev] : devices_)
      if (dev.primary)
        d_->cuDevicePrimaryCtxRelease(dev.dev);
  }

  llvm::StringRef name() const override { return "cuda"; }

  std::optional<SliceId> createSlice(const plan::GpuSlice &plan, std::string &error) override {
    std::lock_guard lock(mu_);
    Device *dev = device(plan, error);
    if (!dev)
      return std::nullopt;
    Slice s;
    s.dev = dev;
    s.role = plan.role();
    s.limit = plan.memory_limit_bytes();
    unsigned want = requestedSms(plan, dev->smCount);
    switch (plan.mechanism()) {
    case plan::GpuSlice::MIG:
      error = "cuda: MIG slices are not supported by this backend (configure MIG outside and plan WHOLE_GPU)";
      return std::nullopt;
    case plan::GpuSlice::WHOLE_GPU:
      s.kind = Kind::Whole;
      s.sms = dev->smCount;
      break;
    case plan::GpuSlice::MPS:
      s.kind = Kind::Mps;
      break;
    default:
      s.kind = d_->green() && dev->green ? Kind::Green : Kind::Mps;
    }
    if (s.kind == Kind::Mps) {
      s.sms = std::min(want, dev->smCount);
      if (s.sms > dev->smCount - dev->mpsSms - dev->usedUnits() * dev->granule) {
        error = "cuda: GPU " + dev->pci + " has no room for " + std::to_string(s.sms) + " more SMs";
        return std::nullopt;
      }
      dev->mpsSms += s.sms;
    } else if (s.kind == Kind::Green) {
      unsigned k = granulesFor(want, dev->granule);
      std::vector<unsigned> units = dev->freeUnits(k);
      if (units.size() < k) {
        error = "cuda: GPU " + dev->pci + " has " + std::to_string(dev->freeUnits(~0u).size() * dev->granule) +
                " free SMs in granules of " + std::to_string(dev->granule) + ", slice of role '" + plan.role() +
                "' needs " + std::to_string(k * dev->granule);
        return std::nullopt;
      }
      if (!makeGreen(*dev, units, plan.stream_priority(), s, error))
        return std::nullopt;
    }
    if (s.limit && !makePool(*dev, s, error)) {
      releaseSlice(s);
      return std::nullopt;
    }
    SliceId id = next_++;
    slices_.emplace(id, std::move(s));
    return id;
  }

  bool resizeSlice(SliceId id, unsigned sms, std::string &error) override {
    std::lock_guard lock(mu_);
    auto it = slices_.find(id);
    if (it == slices_.end()) {
      error = "cuda: no slice " + std::to_string(id);
      return false;
    }
    Slice &s = it->second;
    Device &dev = *s.dev;
    if (s.kind == Kind::Whole) {
      error = "cuda: a whole-GPU slice cannot be resized";
      return false;
    }
    if (s.kind == Kind::Mps) {
      unsigned target = std::min(sms, dev.smCount);
      if (target > dev.smCount - dev.usedUnits() * dev.granule - dev.mpsSms + s.sms) {
        error = "cuda: GPU " + dev.pci + " has no room for " + std::to_string(target) + " SMs";
        return false;
      }
      dev.mpsSms = dev.mpsSms - s.sms + target;
      s.sms = target; // the worker's MPS client picks the new percentage up when it restarts
      return true;
    }
    // Hand-over: the new green context (own granules first, then free ones) is ready before the
    // old one goes; granules are from the same split, so one descriptor may combine them.
    unsigned k = granulesFor(sms, dev.granule);
    std::vector<unsigned> units(s.units.begin(), s.units.begin() + std::min<size_t>(k, s.units.size()));
    if (k > units.size()) {
      std::vector<unsigned> extra = dev.freeUnits(unsigned(k - units.size()));
      if (units.size() + extra.size() < k) {
        error = "cuda: GPU " + dev.pci + " cannot grow the slice to " + std::to_string(k * dev.granule) + " SMs";
        return false;
      }
      units.insert(units.end(), extra.begin(), extra.end());
    }
    Slice next;
    next.dev = s.dev;
    next.kind = Kind::Green;
    for (unsigned u : s.units)
      dev.unitUsed[u] = false; // makeGreen marks the chosen ones again
    if (!makeGreen(dev, units, s.priority, next, error)) {
      for (unsigned u : s.units)
        dev.unitUsed[u] = true;
      return false;
    }
    d_->cuStreamDestroy(s.stream);
    d_->cuGreenCtxDestroy(s.green);
    s.green = next.green;
    s.stream = next.stream;
    s.units = std::move(next.units);
    s.sms = next.sms;
    return true;
  }

  void destroySlice(SliceId id) override {
    std::lock_guard lock(mu_);
    auto it = slices_.find(id);
    if (it == slices_.end())
      return;
    releaseSlice(it->second);
    slices_.erase(it);
  }

  bool heartbeat(SliceId id) override {
    std::lock_guard lock(mu_);
    auto it = slices_.find(id);
    if (it == slices_.end())
      return false;
    int v = 0;
    return d_->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, it->second.dev->dev) == CUDA_SUCCESS;
  }

  // Device-wide figures (the driver has no per-green-context counters): temperature and utilisation
  // from NVML, memory in use from NVML or cuMemGetInfo. TFLOP/s is the worker's to report (0 here).
  std::optional<SliceSample> sample(SliceId id) override {
    std::lock_guard lock(mu_);
    auto it = slices_.find(id);
    if (it == slices_.end())
      return std::nullopt;
    Slice &s = it->second;
    SliceSample out;
    out.sms = s.sms;
    out.temperatureMilliC = kUnknownTemperature;
    Nvml::Device nd = nullptr;
    bool haveMemory = false;
    if (nvml_ && nvml_->byPciBusId(s.dev->pci.c_str(), &nd) == 0) {
      unsigned c = 0;
      if (nvml_->temperature && nvml_->temperature(nd, /*NVML_TEMPERATURE_GPU*/ 0, &c) == 0)
        out.temperatureMilliC = int64_t(c) * 1000;
      Nvml::Utilization u{};
      if (nvml_->utilization && nvml_->utilization(nd, &u) == 0)
        out.utilisation = u.gpu / 100.0;
      Nvml::Memory m{};
      if (nvml_->memory && nvml_->memory(nd, &m) == 0)
        out.memoryBytes = m.used, haveMemory = true;
    }
    if (!haveMemory && d_->cuMemGetInfo && d_->cuCtxPushCurrent(s.dev->primary) == CUDA_SUCCESS) {
      size_t free = 0, total = 0;
      if (d_->cuMemGetInfo(&free, &total) == CUDA_SUCCESS)
        out.memoryBytes = total - free;
      CUcontext popped;
      d_->cuCtxPopCurrent(&popped);
    } else if (!haveMemory) {
      return std::nullopt; // the device did not answer
    }
    return out;
  }

  std::vector<std::pair<std::string, std::string>> workerEnvironment(SliceId id) override {
    std::lock_guard lock(mu_);
    std::vector<std::pair<std::string, std::string>> env;
    auto it = slices_.find(id);
    if (it == slices_.end())
      return env;
    env.emplace_back("MSCALE_GPU_BACKEND", "cuda");
    if (it->second.kind == Kind::Mps)
      env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                       std::to_string(mpsPercentage(it->second.sms, it->second.dev->smCount)));
    return env;
  }

private:
  enum class Kind { Green, Mps, Whole };

  struct Device {
    CUdevice dev = 0;
    std::string pci;
    unsigned smCount = 0;
    bool green = false;
    unsigned granule = 1;
    std::vector<CUdevResource> units; // one split of the whole GPU
    std::vector<bool> unitUsed;
    unsigned mpsSms = 0;
    CUcontext primary = nullptr;
    int leastPriority = 0, greatestPriority = 0;

    unsigned usedUnits() const { return unsigned(std::count(unitUsed.begin(), unitUsed.end(), true)); }
    std::vector<unsigned> freeUnits(unsigned k) const {
      std::vector<unsigned> out;
      for (unsigned i = 0; i < units.size() && out.size() < k; ++i)
        if (!unitUsed[i])
          out.push_back(i);
      return out;
    }
  };

  struct Slice {
    Device *dev = nullptr;
    Kind kind = Kind::Green;
    std::string role;
    unsigned sms = 0;
    std::vector<unsigned> units;
    CUgreenCtx green = nullptr;
    CUstream stream = nullptr;
    CUmemoryPool pool = nullptr;
    uint64_t limit = 0;
    int priority = 0;
  };

  // The device a plan entry names (by PCI address when given), set up on first use: primary
  // context, stream priority range, SM resource and its split into granules.
  Device *device(const plan::GpuSlice &plan, std::string &error) {
    CUdevice dev = 0;
    CUresult rc;
    if (!plan.pci_address().empty() && d_->cuDeviceGetByPCIBusId)
      rc = d_->cuDeviceGetByPCIBusId(&dev, plan.pci_address().c_str());
    else
      rc = d_->cuDeviceGet(&dev, int(plan.gpu_index()));
    if (rc != CUDA_SUCCESS) {
      error = "cuda: GPU " + (plan.pci_address().empty() ? std::to_string(plan.gpu_index()) : plan.pci_address()) +
              ": " + d_->err(plan.pci_address().empty() ? "cuDeviceGet" : "cuDeviceGetByPCIBusId", rc);
      return nullptr;
    }
    auto found = devices_.find(int(dev));
    if (found != devices_.end())
      return &found->second;
    Device d;
    d.dev = dev;
    char bus[32] = {0};
    d.pci = d_->cuDeviceGetPCIBusId && d_->cuDeviceGetPCIBusId(bus, sizeof bus, dev) == CUDA_SUCCESS
                ? std::string(bus)
                : std::to_string(int(dev));
    int sms = 0;
    if ((rc = d_->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) != CUDA_SUCCESS) {
      error = "cuda: GPU " + d.pci + ": " + d_->err("cuDeviceGetAttribute", rc);
      return nullptr;
    }
    d.smCount = unsigned(sms);
    if ((rc = d_->cuDevicePrimaryCtxRetain(&d.primary, dev)) != CUDA_SUCCESS) {
      error = "cuda: GPU " + d.pci + ": " + d_->err("cuDevicePrimaryCtxRetain", rc);
      return nullptr;
    }
    if (d_->cuCtxGetStreamPriorityRange && d_->cuCtxPushCurrent(d.primary) == CUDA_SUCCESS) {
      d_->cuCtxGetStreamPriorityRange(&d.leastPriority, &d.greatestPriority);
      CUcontext popped;
      d_->cuCtxPopCurrent(&popped);
    }
    if (d_->green()) {
      CUdevResource whole{};
      rc = d_->cuDeviceGetDevResource(dev, &whole, CU_DEV_RESOURCE_TYPE_SM);
      if (rc == CUDA_SUCCESS) {
        d.granule = smGranule(whole.sm.minSmPartitionSize, whole.sm.smCoscheduledAlignment);
        unsigned n = whole.sm.smCount / d.granule;
        d.units.resize(n);
        CUdevResource rest{};
        rc = d_->cuDevSmResourceSplitByCount(d.units.data(), &n, &whole, &rest, 0, d.granule);
        if (rc != CUDA_SUCCESS) {
          d_->cuDevicePrimaryCtxRelease(dev);
          error = "cuda: GPU " + d.pci + ": " + d_->err("cuDevSmResourceSplitByCount", rc);
          return nullptr;
        }
        d.units.resize(n);
        d.unitUsed.assign(n, false);
        if (n)
          d.granule = d.units[0].sm.smCount; // the driver may round the granule up
        d.green = n > 0;
      } else if (rc != CUDA_ERROR_NOT_SUPPORTED) {
        d_->cuDevicePrimaryCtxRelease(dev);
        error = "cuda: GPU " + d.pci + ": " + d_->err("cuDeviceGetDevResource", rc);
        return nullptr;
      }
    }
    return &devices_.emplace(int(dev), std::move(d)).first->second;
  }

  bool makeGreen(Device &dev, const std::vector<unsigned> &units, int priority, Slice &s, std::string &error) {
    std::vector<CUdevResource> res;
    for (unsigned u : units)
      res.push_back(dev.units[u]);
    CUdevResourceDesc desc = nullptr;
    CUresult rc = d_->cuDevResourceGenerateDesc(&desc, res.data(), unsigned(res.size()));
    if (rc != CUDA_SUCCESS) {
      error = "cuda: GPU " + dev.pci + ": " + d_->err("cuDevResourceGenerateDesc", rc);
      return false;
    }
    CUgreenCtx g = nullptr;
    if ((rc = d_->cuGreenCtxCreate(&g, desc, dev.dev, CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS) {
      error = "cuda: GPU " + dev.pci + ": " + d_->err("cuGreenCtxCreate", rc);
      return false;
    }
    // CUDA priorities: lower is more urgent, clamped to what the device offers.
    int prio = std::clamp(priority, std::min(dev.greatestPriority, dev.leastPriority),
                          std::max(dev.greatestPriority, dev.leastPriority));
    CUstream stream = nullptr;
    if ((rc = d_->cuGreenCtxStreamCreate(&stream, g, CU_STREAM_NON_BLOCKING, prio)) != CUDA_SUCCESS) {
      d_->cuGreenCtxDestroy(g);
      error = "cuda: GPU " + dev.pci + ": " + d_->err("cuGreenCtxStreamCreate", rc);
      return false;
    }
    s.green = g;
    s.stream = stream;
    s.priority = prio;
    s.units = units;
    s.sms = 0;
    for (unsigned u : units) {
      dev.unitUsed[u] = true;
      s.sms += dev.units[u].sm.smCount;
    }
    return true;
  }

  // A pool capped at the slice's limit (maxSize from driver 12.2) that keeps what it holds up to
  // the limit (release threshold).
  bool makePool(Device &dev, Slice &s, std::string &error) {
    if (!d_->cuMemPoolCreate || !d_->cuMemPoolSetAttribute) {
      error = "cuda: driver has no memory pools (cuMemPoolCreate)";
      return false;
    }
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = int(dev.dev);
    if (d_->version >= 12020)
      props.maxSize = s.limit;
    CUresult rc = d_->cuMemPoolCreate(&s.pool, &props);
    if (rc != CUDA_SUCCESS) {
      s.pool = nullptr;
      error = "cuda: GPU " + dev.pci + ": " + d_->err("cuMemPoolCreate", rc);
      return false;
    }
    cuuint64_t threshold = s.limit;
    if ((rc = d_->cuMemPoolSetAttribute(s.pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold)) != CUDA_SUCCESS) {
      error = "cuda: GPU " + dev.pci + ": " + d_->err("cuMemPoolSetAttribute", rc);
      return false;
    }
    return true;
  }

  void releaseSlice(Slice &s) {
    if (s.pool)
      d_->cuMemPoolDestroy(s.pool);
    if (s.stream)
      d_->cuStreamDestroy(s.stream);
    if (s.green)
      d_->cuGreenCtxDestroy(s.green);
    for (unsigned u : s.units)
      s.dev->unitUsed[u] = false;
    if (s.kind == Kind::Mps)
      s.dev->mpsSms -= std::min(s.dev->mpsSms, s.sms);
    s.pool = nullptr, s.stream = nullptr, s.green = nullptr;
    s.units.clear();
  }

  std::shared_ptr<Driver> d_;
  std::unique_ptr<Nvml> nvml_;
  std::mutex mu_;
  std::map<int, Device> devices_;
  std::map<SliceId, Slice> slices_;
  SliceId next_ = 1;
};

} // namespace

CudaProbe probeCuda(const BackendOptions &options) {
  CudaProbe probe;
  loadDriver(options, probe); // the library stays mapped (hal::CudaDriver): drivers are not unloaded
  return probe;
}

std::unique_ptr<GpuBackend> createCudaBackend(const BackendOptions &options, std::string &why) {
  CudaProbe probe;
  auto driver = loadDriver(options, probe);
  why = probe.why;
  if (!driver)
    return nullptr;
  return std::make_unique<CudaBackend>(std::move(driver),
                                       envOr("MSCALE_NVML_LIBRARY", options.nvmlLibrary, "libnvidia-ml.so.1"));
}

} // namespace msc::exec
