// Reads the health facts of a node; see Sampler.h.
#include "health/Sampler.h"

#include "hal/CudaDriver.h"
#include "health/KernelLog.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <cerrno>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace msc::health {
namespace {

bool isLive(llvm::StringRef root) { return root.empty() || root == "/"; }

std::string joinRoot(llvm::StringRef root, llvm::StringRef path) {
  if (isLive(root))
    return path.str();
  return root.rtrim('/').str() + path.str();
}

std::optional<std::string> readText(const std::string &file) {
  // sysfs files report a size of 4096 whatever they hold: read as a stream.
  auto buf = llvm::MemoryBuffer::getFileAsStream(file);
  if (!buf)
    return std::nullopt;
  return (*buf)->getBuffer().trim().str();
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    out.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(out.begin(), out.end());
  return out;
}

// Reads a number; a file that is there but does not hold one is recorded as malformed. `shown` is
// the path as reports print it (relative to the root).
template <typename T>
std::optional<T> readNumber(const std::string &root, const std::string &shown, Sample &sample) {
  std::optional<std::string> text = readText(joinRoot(root, shown));
  if (!text)
    return std::nullopt;
  T value{};
  if (llvm::StringRef(*text).getAsInteger(10, value)) {
    sample.malformed.push_back({shown, *text, "an integer"});
    return std::nullopt;
  }
  return value;
}

std::string thermalInput(llvm::StringRef source) {
  if (source.starts_with("thermal_zone"))
    return "/sys/class/thermal/" + source.str() + "/temp";
  return "/sys/class/hwmon/" + source.str() + "_input";
}

// The error counters hal reports (hal/SysfsProbe.cpp), plus symbol errors.
bool isErrorCounter(llvm::StringRef name) {
  return name.contains("error") || name.contains("discard") || name == "link_downed" || name == "VL15_dropped" ||
         name.contains("overrun");
}

void readThermal(const hal::Topology &t, const std::string &root, Sample &sample) {
  for (hal::VertexId v : t.thermalSensors()) {
    const hal::ThermalInfo *info = t.vertex(v).as<hal::ThermalInfo>();
    if (!info)
      continue;
    std::string path = thermalInput(info->source);
    if (std::optional<int64_t> temp = readNumber<int64_t>(root, path, sample))
      sample.thermal.push_back({t.vertex(v).name, path, *temp, info->limitMilliC});
    else if (!llvm::sys::fs::exists(joinRoot(root, path)))
      sample.notes.push_back("thermal sensor '" + t.vertex(v).name + "': " + path + " is gone");
  }
}

void readRdma(const hal::Topology &t, const std::string &root, Sample &sample) {
  for (hal::VertexId v : t.verticesOf(hal::VertexKind::RdmaDevice)) {
    const std::string &dev = t.vertex(v).name;
    for (const hal::RdmaPort &p : t.vertex(v).as<hal::RdmaInfo>()->ports) {
      RdmaReading r;
      r.device = dev;
      r.port = p.number;
      r.path = "/sys/class/infiniband/" + dev + "/ports/" + std::to_string(p.number);
      std::optional<std::string> state = readText(joinRoot(root, r.path + "/state"));
      if (!state) {
        // A port known from libibverbs alone has no sysfs directory to re-read.
        sample.notes.push_back("RDMA port " + r.key() + ": no " + r.path + "/state to read");
        continue;
      }
      llvm::StringRef s = llvm::StringRef(*state).split(':').second.trim();
      r.state = s.empty() ? *state : s.str();
      for (const std::string &c : listDir(joinRoot(root, r.path + "/counters")))
        if (isErrorCounter(c))
          if (auto value = readNumber<uint64_t>(root, r.path + "/counters/" + c, sample))
            r.errorCounters[c] = *value;
      sample.rdma.push_back(std::move(r));
    }
  }
}

void readEdac(const std::string &root, Sample &sample) {
  const std::string base = "/sys/devices/system/edac/mc";
  std::vector<std::string> mcs = listDir(joinRoot(root, base));
  for (const std::string &mc : mcs) {
    llvm::StringRef name = mc;
    unsigned index = 0;
    if (!name.consume_front("mc") || name.getAsInteger(10, index))
      continue;
    EdacReading r;
    r.controller = mc;
    r.path = base + "/" + mc;
    auto ce = readNumber<uint64_t>(root, r.path + "/ce_count", sample);
    auto ue = readNumber<uint64_t>(root, r.path + "/ue_count", sample);
    if (!ce || !ue)
      continue;
    r.corrected = *ce;
    r.uncorrected = *ue;
    sample.edac.push_back(std::move(r));
  }
  if (sample.edac.empty() && !llvm::any_of(sample.malformed, [&](const Malformed &m) {
        return llvm::StringRef(m.path).starts_with(base);
      }))
    sample.notes.push_back("EDAC: no memory controller under " + base);
}

void readHugepages(const hal::Topology &t, const std::string &root, Sample &sample) {
  for (unsigned node : t.numaNodes()) {
    const hal::NumaInfo *info = t.numaInfo(node);
    if (!info)
      continue;
    for (const hal::HugepagePool &pool : info->hugepages) {
      std::string path = "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/hugepages-" +
                         std::to_string(pool.pageSize / 1024) + "kB/nr_hugepages";
      if (auto total = readNumber<uint64_t>(root, path, sample))
        sample.hugepages.push_back({node, pool.pageSize, path, *total});
    }
  }
}

uint64_t le64(llvm::StringRef bytes, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i)
    v |= uint64_t(uint8_t(bytes[at + i])) << (8 * i);
  return v;
}

// The admin command Get Log Page (02h), log identifier 02h, 512 bytes, for every namespace.
std::optional<std::string> smartLogByIoctl(const std::string &device, std::string &why) {
  int fd = ::open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = std::string("cannot open: ") + strerror(errno);
    return std::nullopt;
  }
  std::string page(512, '\0');
  nvme_admin_cmd cmd{};
  cmd.opcode = 0x02;
  cmd.nsid = 0xffffffff;
  cmd.addr = reinterpret_cast<uint64_t>(page.data());
  cmd.data_len = uint32_t(page.size());
  cmd.cdw10 = 0x02u | ((uint32_t(page.size() / 4) - 1) << 16); // LID 02h, NUMDL (dwords - 1)
  int rc = ::ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
  int err = errno;
  ::close(fd);
  if (rc != 0) {
    why = rc < 0 ? std::string("admin command failed: ") + strerror(err)
                 : "admin command returned status " + std::to_string(rc);
    return std::nullopt;
  }
  return page;
}

void readNvme(const hal::Topology &t, const std::string &root, Sample &sample) {
  for (hal::VertexId v : t.verticesOf(hal::VertexKind::NvmeController)) {
    const std::string &name = t.vertex(v).name;
    if (!llvm::StringRef(name).starts_with("nvme"))
      continue;
    std::string shown = "/dev/" + name;
    std::string file = joinRoot(root, shown);
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
      sample.notes.push_back("NVMe " + name + ": no " + shown + ", SMART log not read");
      continue;
    }
    std::optional<std::string> page;
    std::string why;
    if (S_ISCHR(st.st_mode)) {
      page = smartLogByIoctl(file, why);
    } else if (auto buf = llvm::MemoryBuffer::getFile(file, /*IsText=*/false)) {
      page = (*buf)->getBuffer().str();
    } else {
      why = "cannot read";
    }
    if (!page) {
      sample.notes.push_back("NVMe " + name + ": SMART log not read (" + why + ")");
      continue;
    }
    NvmeReading r;
    r.controller = name;
    r.path = shown;
    if (!decodeSmartLog(*page, r)) {
      sample.malformed.push_back({shown, std::to_string(page->size()) + " bytes", "a 512-byte SMART log page"});
      continue;
    }
    sample.nvme.push_back(std::move(r));
  }
}

// One NVML library as this process keeps it: initialised once, with one event set to which every
// GPU NVML knows is registered for Xid critical errors. NVML delivers an event only to the sets
// registered before it happened, so the set lives as long as the process and each look drains it.
struct NvmlSession {
  std::unique_ptr<hal::Nvml> nvml;
  hal::Nvml::EventSet xidEvents = nullptr;
  std::string xidEventsUnavailable;                    // why Xid events are not read; "" while they are
  std::map<std::string, hal::Nvml::Device> registered; // PCI address -> the handle its events name
  std::map<std::string, std::string> notRegistered;    // PCI address -> why (not tried again)

  NvmlSession() = default;
  NvmlSession(const NvmlSession &) = delete;
  NvmlSession &operator=(const NvmlSession &) = delete;
  ~NvmlSession() {
    if (xidEvents)
      nvml->eventSetFree(xidEvents); // before the Nvml's destructor shuts NVML down
  }

  void open(const std::string &library) {
    nvml = hal::Nvml::open(library);
    if (!nvml)
      return;
    if (!nvml->hasEvents()) {
      xidEventsUnavailable = library + " has no event API (nvmlEventSetCreate, nvmlDeviceRegisterEvents, "
                                       "nvmlEventSetWait, nvmlEventSetFree)";
      return;
    }
    if (int rc = nvml->eventSetCreate(&xidEvents); rc != 0) {
      xidEvents = nullptr;
      xidEventsUnavailable = "nvmlEventSetCreate returned " + std::to_string(rc);
    }
  }

  // Registers `device` once; true when this look registered it (its Xids count from now on).
  bool registerForXids(const std::string &pci, hal::Nvml::Device device) {
    if (!xidEvents || registered.count(pci) || notRegistered.count(pci))
      return false;
    int rc = nvml->registerEvents(device, hal::Nvml::EventTypeXidCriticalError, xidEvents);
    if (rc == 0) {
      registered[pci] = device;
      return true;
    }
    notRegistered[pci] = rc == hal::Nvml::ErrorNotSupported
                             ? "NVML does not support Xid events on it (NVML_ERROR_NOT_SUPPORTED)"
                             : "nvmlDeviceRegisterEvents returned " + std::to_string(rc);
    return false;
  }
};

// An Xid storm must not keep a look from ending: what is left waits in the set for the next look.
constexpr unsigned MaxXidEventsPerLook = 4096;

// Every Xid event the set holds, without waiting (timeout 0 ms), counted by GPU and Xid.
void drainXids(NvmlSession &session, const std::string &library, Sample &sample) {
  for (unsigned drained = 0; drained < MaxXidEventsPerLook; ++drained) {
    hal::Nvml::EventData event{}; // nvmlEventSetWait (before _v2) fills only the first three fields
    int rc = session.nvml->eventSetWait(session.xidEvents, &event, 0);
    if (rc == hal::Nvml::ErrorTimeout)
      return;
    if (rc != 0) {
      sample.notes.push_back("GPU Xid events through NVML: " + std::string(session.nvml->eventSetWaitName) +
                             " returned " + std::to_string(rc) + ", the rest are read at the next look");
      return;
    }
    if (!(event.eventType & hal::Nvml::EventTypeXidCriticalError))
      continue;
    auto gpu = llvm::find_if(session.registered, [&](auto &r) { return r.second == event.device; });
    if (gpu == session.registered.end())
      continue; // only registered GPUs have events; a handle NVML no longer gives out has no PCI address
    unsigned xid = unsigned(event.eventData);
    auto at = llvm::find_if(sample.gpuXids,
                            [&](const GpuXidReading &x) { return x.pci == gpu->first && x.xid == xid; });
    if (at == sample.gpuXids.end()) {
      sample.gpuXids.push_back({gpu->first, library, xid, 0, sample.monotonicNs, sample.monotonicNs});
      at = sample.gpuXids.end() - 1;
    }
    ++at->events;
  }
  sample.notes.push_back("GPU Xid events through NVML: more than " + std::to_string(MaxXidEventsPerLook) +
                         " in one look, the rest are read at the next");
}

// The memory health of each GPU the node advertises, through NVML: ECC counters since the driver
// loaded, and repairs waiting for a reset. NVML's "not supported" (3) leaves a value unset. Then the
// Xid events NVML delivered since the last look.
void readGpus(const hal::Topology &t, const SamplerOptions &options, Sample &sample) {
  if (t.gpus().empty())
    return;
  std::optional<std::string> library = options.nvmlLibrary;
  if (!library && isLive(options.root))
    library = "libnvidia-ml.so.1";
  if (!library) {
    sample.notes.push_back("GPU memory health through NVML: not read under a recorded tree (its GPUs are not "
                           "this machine's); NVIDIA Xid lines are judged from the kernel log");
    return;
  }
  // NVML is initialised once a process and library (nvmlInit costs far more than a look at the
  // counters, and an agent looks every few hundred milliseconds); one that does not load is not
  // tried again.
  static std::mutex opening;
  static std::map<std::string, NvmlSession> sessions;
  std::lock_guard<std::mutex> lock(opening);
  auto [at, fresh] = sessions.try_emplace(*library);
  NvmlSession &session = at->second;
  if (fresh)
    session.open(*library);
  hal::Nvml *nvml = session.nvml.get();
  if (!nvml) {
    sample.notes.push_back("GPU memory health: " + *library + " cannot be loaded or initialised; NVIDIA Xid lines "
                           "are judged from the kernel log");
    return;
  }
  unsigned registeredNow = 0;
  for (const hal::GpuRef &gpu : t.gpus()) {
    std::string pci = gpu.info->pci.str();
    hal::Nvml::Device device = nullptr;
    if (nvml->byPciBusId(pci.c_str(), &device) != 0) {
      sample.notes.push_back("GPU " + pci + ": NVML does not know it, its memory health is not read");
      continue;
    }
    registeredNow += session.registerForXids(pci, device);
    if (auto why = session.notRegistered.find(pci); why != session.notRegistered.end())
      sample.notes.push_back("GPU " + pci + ": Xid events through NVML not read (" + why->second +
                             "); its Xids are judged from the kernel log");
    GpuMemoryReading r;
    r.pci = pci;
    r.library = *library;
    unsigned long long count = 0;
    if (nvml->totalEccErrors && nvml->totalEccErrors(device, 0, 0, &count) == 0)
      r.eccCorrected = count;
    if (nvml->totalEccErrors && nvml->totalEccErrors(device, 1, 0, &count) == 0)
      r.eccUncorrected = count;
    int retirement = 0;
    if (nvml->retiredPagesPending && nvml->retiredPagesPending(device, &retirement) == 0)
      r.retirementPending = retirement != 0;
    unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
    if (nvml->remappedRows && nvml->remappedRows(device, &corrected, &uncorrected, &pending, &failed) == 0) {
      r.remapPending = pending != 0;
      r.remapFailed = failed != 0;
    }
    sample.gpus.push_back(std::move(r));
  }
  if (!session.xidEventsUnavailable.empty()) {
    sample.notes.push_back("GPU Xid events through NVML: " + session.xidEventsUnavailable +
                           "; NVIDIA Xid lines are judged from the kernel log");
    return;
  }
  if (registeredNow)
    sample.notes.push_back("GPU Xid events through NVML: " + std::to_string(registeredNow) +
                           " GPU(s) registered by this look; NVML delivers only the Xids that happen after it "
                           "(earlier ones are in the kernel log)");
  drainXids(session, *library, sample);
}

// Every record the kernel still holds, without blocking: /dev/kmsg returns one record per read and
// EAGAIN at the end; EPIPE when records were overwritten under the reader (read on).
std::optional<std::string> readKmsgDevice(const std::string &device, std::string &why) {
  int fd = ::open(device.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = std::string("cannot open: ") + strerror(errno);
    return std::nullopt;
  }
  std::string all;
  char record[8192];
  for (size_t records = 0; records < 1'000'000; ++records) {
    ssize_t n = ::read(fd, record, sizeof record);
    if (n < 0 && errno == EPIPE)
      continue;
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    all.append(record, size_t(n));
    if (all.back() != '\n')
      all.push_back('\n');
  }
  ::close(fd);
  return all;
}

void readKernelLog(const std::string &root, Sample &sample) {
  std::string file = joinRoot(root, "/dev/kmsg");
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    sample.notes.push_back("kernel log: no /dev/kmsg to read");
    return;
  }
  std::optional<std::string> text;
  std::string why;
  if (S_ISCHR(st.st_mode))
    text = readKmsgDevice(file, why);
  else if (auto buf = llvm::MemoryBuffer::getFileAsStream(file))
    text = (*buf)->getBuffer().str();
  else
    why = "cannot read";
  if (!text) {
    sample.notes.push_back("kernel log: /dev/kmsg not read (" + why + ")");
    return;
  }
  sample.kernelLogPath = "/dev/kmsg";
  llvm::SmallVector<llvm::StringRef, 0> lines;
  llvm::StringRef(*text).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    if (line.starts_with(" ")) // a record's KEY=VALUE continuation
      continue;
    std::optional<LogClass> c = classifyKernelLogLine(line);
    if (!c)
      continue;
    auto it = llvm::find_if(sample.kernelLog, [&](const KernelLogClass &k) { return k.name == c->name; });
    if (it == sample.kernelLog.end()) {
      sample.kernelLog.push_back({c->name, 0, ""});
      it = sample.kernelLog.end() - 1;
    }
    ++it->lines;
    it->last = kernelLogMessage(line).trim().str();
  }
}

} // namespace

bool decodeSmartLog(llvm::StringRef page, NvmeReading &out) {
  if (page.size() < 512)
    return false;
  out.criticalWarning = uint8_t(page[0]);
  out.availableSpare = uint8_t(page[3]);
  out.spareThreshold = uint8_t(page[4]);
  out.mediaErrors = le64(page, 160);
  return true;
}

Sample takeSample(const hal::Topology &advertised, const SamplerOptions &options, const Clock &clock) {
  Sample sample;
  sample.monotonicNs = clock.monotonicNs();
  const std::string &root = options.root;
  readThermal(advertised, root, sample);
  readRdma(advertised, root, sample);
  readEdac(root, sample);
  readHugepages(advertised, root, sample);
  readNvme(advertised, root, sample);
  readKernelLog(root, sample);
  readGpus(advertised, options, sample);
  return sample;
}

} // namespace msc::health
