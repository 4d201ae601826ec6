// Reading a node's health facts: the sensors, RDMA ports and hugepage pools the topology advertises
// (re-read, never taken from the topology's snapshot), EDAC memory controllers, NVMe SMART logs and
// the kernel log, under a root ("/" live, or a recorded or mutated tree in tests). Reads only;
// judging is health/Judge.h's.
#pragma once

#include "hal/Topology.h"
#include "health/Sample.h"
#include "support/Clock.h"

#include <optional>
#include <string>

namespace msc::health {

struct SamplerOptions {
  // sysfs/procfs root. Under "/" the kernel log is /dev/kmsg and NVMe logs come from the admin
  // ioctl on /dev/nvmeN; under a recorded tree ROOT/dev/kmsg and ROOT/dev/nvmeN are read as
  // plain files (kmsg records or dmesg lines; a 512-byte SMART log page) when present.
  std::string root = "/";
  // The NVML library GPUs' memory health and Xid events are read through (dlopen; once a process,
  // with one event set that each look drains without waiting). Unset: libnvidia-ml.so.1 under
  // "/", none under another root (a recorded tree's GPUs are not this machine's); tests name a fake.
  std::optional<std::string> nvmlLibrary = {};
};

// `advertised` is what the node registers (discovered from the same root): its sensors' limits are
// the thresholds, its RDMA ports are the ones that must be up, its pools the ones watched.
Sample takeSample(const hal::Topology &advertised, const SamplerOptions &options, const Clock &clock);

// The SMART / health log page's fields (NVMe base spec, figure "SMART / Health Information").
// false when `page` is shorter than the 512 bytes of the page.
bool decodeSmartLog(llvm::StringRef page, NvmeReading &out);

} // namespace msc::health
