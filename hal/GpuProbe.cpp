// GPUs on the live machine through the CUDA driver API and NVML, both loaded with dlopen
// (hal/CudaDriver.h): the build never links libcuda. The toolkit's stub libcuda returns
// CUDA_ERROR_STUB_LIBRARY (34) from cuInit: that means "no driver", like a missing library.
#include "hal/detail/Probes.h"

#include "hal/CudaDriver.h"

#include <string>

namespace msc::hal::detail {
namespace {

void addNvmlFacts(Topology &t) {
  std::unique_ptr<Nvml> nvml = Nvml::open();
  if (!nvml) {
    t.addNote("NVML: not present (no GPU temperatures or MIG mode)");
    return;
  }
  for (VertexId g : t.verticesOf(VertexKind::Gpu)) {
    GpuInfo &info = *t.mutableVertex(g).as<GpuInfo>();
    if (info.vendor != "NVIDIA")
      continue;
    Nvml::Device dev = nullptr;
    if (nvml->byPciBusId(info.pci.str().c_str(), &dev) != 0)
      continue;
    unsigned c = 0, pending = 0;
    if (nvml->temperature && nvml->temperature(dev, /*NVML_TEMPERATURE_GPU*/ 0, &c) == 0)
      info.temperatureMilliC = int64_t(c) * 1000;
    if (nvml->migMode && nvml->migMode(dev, &c, &pending) == 0)
      info.mig = c ? MigMode::Enabled : MigMode::Disabled;
    if (nvml->temperatureThreshold &&
        nvml->temperatureThreshold(dev, /*NVML_TEMPERATURE_THRESHOLD_SLOWDOWN*/ 1, &c) == 0) {
      Vertex s;
      s.kind = VertexKind::ThermalSensor;
      s.name = "gpu/" + info.pci.str();
      s.data = ThermalInfo{info.temperatureMilliC.value_or(0), int64_t(c) * 1000, "nvml"};
      t.addVertex(std::move(s), g);
    }
  }
}

} // namespace

void addCudaFacts(Topology &t) {
  t.reindex();
  std::string why;
  std::unique_ptr<CudaDriver> cuda = CudaDriver::open("libcuda.so.1", why);
  if (!cuda) {
    t.addNote("CUDA driver: not present (libcuda.so.1 cannot be loaded); NVIDIA GPUs are seen as PCI devices only");
    return;
  }
  auto cuInitFn = cuda->proc<CUresult (*)(unsigned)>("cuInit");
  auto count = cuda->proc<CUresult (*)(int *)>("cuDeviceGetCount");
  auto get = cuda->proc<CUresult (*)(CUdevice *, int)>("cuDeviceGet");
  auto name = cuda->proc<CUresult (*)(char *, int, CUdevice)>("cuDeviceGetName");
  auto mem = cuda->proc<CUresult (*)(size_t *, CUdevice)>("cuDeviceTotalMem");
  auto attr = cuda->proc<CUresult (*)(int *, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  auto busId = cuda->proc<CUresult (*)(char *, int, CUdevice)>("cuDeviceGetPCIBusId");
  auto version = cuda->proc<CUresult (*)(int *)>("cuDriverGetVersion");
  bool green = cuda->proc("cuGreenCtxCreate", 12040) != nullptr;
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
    GpuInfo &info = *t.mutableVertex(g).as<GpuInfo>();
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
