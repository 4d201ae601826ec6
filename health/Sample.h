// What one look at a node's health read: the values, each with the file it came from. A sample
// holds facts only; whether they are good or bad is the judge's (health/Judge.h). Samples are
// values: the monitor keeps the first and the previous one, and `mscale-cli hardware health
// --state FILE` keeps them between runs (sampleToJson / sampleFromJson).
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/JSON.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace msc::health {

// A sensor the topology knows (hal::ThermalInfo): its limit is the topology's, its temperature re-read.
struct ThermalReading {
  std::string name;                   // "x86_pkg_temp", "nvme/Composite"
  std::string path;                   // the file the temperature was read from
  int64_t tempMilliC = 0;
  std::optional<int64_t> limitMilliC; // the critical (or hot / max) trip point hal found
};

// An RDMA port the node advertises, with its state and error counters (name -> value).
struct RdmaReading {
  std::string device; // "mlx5_0"
  unsigned port = 0;
  std::string path;   // the port's directory
  std::string state;  // "ACTIVE", "DOWN", ... ("" when the state file is absent)
  std::map<std::string, uint64_t> errorCounters;
  std::string key() const { return device + ":" + std::to_string(port); }
};

// One EDAC memory controller.
struct EdacReading {
  std::string controller; // "mc0"
  std::string path;       // its directory
  uint64_t corrected = 0, uncorrected = 0;
};

// One NUMA node's hugepage pool of one page size.
struct HugepageReading {
  unsigned numaNode = 0;
  uint64_t pageSize = 0; // bytes
  std::string path;      // the nr_hugepages file
  uint64_t total = 0;
};

// An NVMe controller's SMART / health log page (NVMe base spec, log identifier 02h).
struct NvmeReading {
  std::string controller; // "nvme0"
  std::string path;       // the character device (or the recorded log page) read
  uint8_t criticalWarning = 0;
  uint8_t availableSpare = 0, spareThreshold = 0; // percent
  uint64_t mediaErrors = 0;                       // low 64 bits of the 128-bit counter
};

// Lines of the kernel log of one class (health/KernelLog.h) and the last of them.
struct KernelLogClass {
  std::string name; // "nvidia-xid-fatal", "edac-ue", ...
  uint64_t lines = 0;
  std::string last;
};

// One GPU's memory health through NVML: ECC counters since its driver loaded (volatile), and the
// repairs that wait for a reset. Unset counters: ECC is off or the GPU does not say.
struct GpuMemoryReading {
  std::string pci;     // "0000:07:00.0", as the topology advertises the GPU
  std::string library; // the NVML library read
  std::optional<uint64_t> eccCorrected, eccUncorrected;
  bool retirementPending = false; // retired pages wait for a reset (page retirement, before Ampere)
  bool remapPending = false;      // a remapped row waits for a reset (row remapping, Ampere and later)
  bool remapFailed = false;       // a row could not be remapped: the memory cannot be repaired
};

// The Xid errors one GPU reported through NVML's event API (nvmlEventTypeXidCriticalError), one
// record a GPU and Xid code. NVML delivers each event once, to an event set registered before it
// happened, so the sampler records those since its last look and the monitor carries them from
// sample to sample until the node reboots (carryGpuXids, health/Judge.h), as the kernel log keeps
// its NVRM Xid lines.
struct GpuXidReading {
  std::string pci;     // "0000:07:00.0", as the topology advertises the GPU
  std::string library; // the NVML library that delivered the events
  unsigned xid = 0;    // the event's eventData (999: an Xid NVML does not know)
  uint64_t events = 0;
  uint64_t firstNs = 0, lastNs = 0; // the monotonic times of the samples that drained the first and the last
};

// A value that was there but could not be read as what it must be.
struct Malformed {
  std::string path;
  std::string text;
  std::string expected; // "an integer", "a 512-byte SMART log page"
};

struct Sample {
  uint64_t monotonicNs = 0; // when it was taken, on the injected clock
  std::vector<ThermalReading> thermal;
  std::vector<RdmaReading> rdma;
  std::vector<EdacReading> edac;
  std::vector<HugepageReading> hugepages;
  std::vector<NvmeReading> nvme;
  std::vector<GpuMemoryReading> gpus;
  std::vector<GpuXidReading> gpuXids; // since the node booted (as far as this monitor saw), by GPU and Xid
  std::vector<KernelLogClass> kernelLog; // only classes with at least one line
  std::optional<std::string> kernelLogPath; // unset: no kernel log could be read
  std::vector<Malformed> malformed;
  std::vector<std::string> notes; // what was not read, and why
};

llvm::json::Value sampleToJson(const Sample &sample);
llvm::Expected<Sample> sampleFromJson(const llvm::json::Value &value);

} // namespace msc::health
