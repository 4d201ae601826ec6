// GPUs on the live machine through the CUDA driver API and NVML, both loaded with dlopen: the
// build never links libcuda. The toolkit's stub libcuda returns CUDA_ERROR_STUB_LIBRARY (34) from
// cuInit: that means "no driver", like a missing library.
#include "hal/detail/Probes.h"

#include <cuda.h>
#include <dlfcn.h>

#include <string>

namespace msc::hal::detail {
namespace {

struct Library {
  void *handle = nullptr;
  explicit Library(const char *name) : handle(::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (handle)
      ::dlclose(handle);
  }
  template <typename F> F sym(const char *name) const {
    return handle ? reinterpret_cast<F>(::dlsym(handle, name)) : nullptr;
  }
};

using GetProcAddressFn = CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

template <typename F> F cudaSym(GetProcAddressFn getProc, const char *name, int version = 12000) {
  void *fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (getProc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      status != CU_GET_PROC_ADDRESS_SUCCESS)
    return nullptr;
  return reinterpret_cast<F>(fn);
}

// NVML, declared here: its header is not part of the CUDA toolkit install we build against.
using nvmlDevice = void *;
using NvmlInitFn = int (*)();
using NvmlByPciFn = int (*)(const char *, nvmlDevice *);
using NvmlTempFn = int (*)(nvmlDevice, int, unsigned *);
using NvmlMigFn = int (*)(nvmlDevice, unsigned *, unsigned *);

void addNvmlFacts(Topology &t) {
  Library nvml("libnvidia-ml.so.1");
  auto init = nvml.sym<NvmlInitFn>("nvmlInit_v2");
  auto byPci = nvml.sym<NvmlByPciFn>("nvmlDeviceGetHandleByPciBusId_v2");
  auto temp = nvml.sym<NvmlTempFn>("nvmlDeviceGetTemperature");
  auto threshold = nvml.sym<NvmlTempFn>("nvmlDeviceGetTemperatureThreshold");
  auto mig = nvml.sym<NvmlMigFn>("nvmlDeviceGetMigMode");
  auto shutdown = nvml.sym<NvmlInitFn>("nvmlShutdown");
  if (!init || !byPci || init() != 0) {
    t.addNote("NVML: not present (no GPU temperatures or MIG mode)");
    return;
  }
  for (VertexId g : t.verticesOf(VertexKind::Gpu)) {
    GpuInfo &info = *t.vertex(g).as<GpuInfo>();
    if (info.vendor != "NVIDIA")
      continue;
    nvmlDevice dev = nullptr;
    if (byPci(info.pci.str().c_str(), &dev) != 0)
      continue;
    unsigned c = 0, pending = 0;
    if (temp && temp(dev, /*NVML_TEMPERATURE_GPU*/ 0, &c) == 0)
      info.temperatureMilliC = int64_t(c) * 1000;
    if (mig && mig(dev, &c, &pending) == 0)
      info.mig = c ? MigMode::Enabled : MigMode::Disabled;
    if (threshold && threshold(dev, /*NVML_TEMPERATURE_THRESHOLD_SLOWDOWN*/ 1, &c) == 0) {
      Vertex s;
      s.kind = VertexKind::ThermalSensor;
      s.name = "gpu/" + info.pci.str();
      s.data = ThermalInfo{info.temperatureMilliC.value_or(0), int64_t(c) * 1000, "nvml"};
      t.addVertex(std::move(s), g);
    }
  }
  if (shutdown)
    shutdown();
}

} // namespace

void addCudaFacts(Topology &t) {
  t.reindex();
  Library cuda("libcuda.so.1");
  auto getProc = cuda.sym<GetProcAddressFn>("cuGetProcAddress_v2");
  if (!getProc) {
    t.addNote("CUDA driver: not present (libcuda.so.1 cannot be loaded); NVIDIA GPUs are seen as PCI devices only");
    return;
  }
  auto cuInitFn = cudaSym<CUresult (*)(unsigned)>(getProc, "cuInit");
  auto count = cudaSym<CUresult (*)(int *)>(getProc, "cuDeviceGetCount");
  auto get = cudaSym<CUresult (*)(CUdevice *, int)>(getProc, "cuDeviceGet");
  auto name = cudaSym<CUresult (*)(char *, int, CUdevice)>(getProc, "cuDeviceGetName");
  auto mem = cudaSym<CUresult (*)(size_t *, CUdevice)>(getProc, "cuDeviceTotalMem");
  auto attr = cudaSym<CUresult (*)(int *, CUdevice_attribute, CUdevice)>(getProc, "cuDeviceGetAttribute");
  auto busId = cudaSym<CUresult (*)(char *, int, CUdevice)>(getProc, "cuDeviceGetPCIBusId");
  auto version = cudaSym<CUresult (*)(int *)>(getProc, "cuDriverGetVersion");
  bool green = cudaSym<void *>(getProc, "cuGreenCtxCreate", 12040) != nullptr;
  if (!cuInitFn || !count || !get || !attr || !busId) {
    t.addNote("CUDA driver: present but incomplete (missing entry points)");
    return;
  }
  CUresult rc = cuInitFn(0);
  if (rc == CUDA_ERROR_STUB_LIBRARY || rc == CUDA_ERROR_NO_DEVICE || rc != CUDA_SUCCESS) {
    t.addNote(rc == CUDA_ERROR_STUB_LIBRARY ? "CUDA driver: not present (stub library)"
                                            : "CUDA driver: cuInit failed (error " + std::to_string(int(rc)) + ")");
    return;
  }
  int driver = 0;
  if (version)
    version(&driver);
  int n = 0;
  count(&n);
  for (int i = 0; i < n; ++i) {
    CUdevice dev;
    if (get(&dev, i) != CUDA_SUCCESS)
      continue;
    char bus[32] = {0};
    if (busId(bus, sizeof bus, dev) != CUDA_SUCCESS)
      continue;
    auto addr = parsePciAddress(bus);
    if (!addr)
      continue;
    VertexId pci = t.findPci(*addr);
    if (pci == NoVertex)
      continue;
    VertexId g = ensureGpu(t, pci);
    GpuInfo &info = *t.vertex(g).as<GpuInfo>();
    char model[256] = {0};
    if (name && name(model, sizeof model, dev) == CUDA_SUCCESS)
      info.model = model;
    size_t bytes = 0;
    if (mem && mem(&bytes, dev) == CUDA_SUCCESS)
      info.memoryBytes = bytes;
    int v = 0;
    if (attr(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS)
      info.smCount = unsigned(v);
    if (attr(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS)
      info.ccMajor = v;
    if (attr(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS)
      info.ccMinor = v;
    info.greenContexts = green && driver >= 12040;
    info.vendor = "NVIDIA";
    std::string alias = "cuda" + std::to_string(i);
    if (std::find(info.aliases.begin(), info.aliases.end(), alias) == info.aliases.end())
      info.aliases.push_back(alias);
  }
  t.addNote("CUDA driver: version " + std::to_string(driver) + ", " + std::to_string(n) + " device(s)");
  addNvmlFacts(t);
}

} // namespace msc::hal::detail
