// Keeping a discovered topology current without discovering it again. What changes on a running
// node without a hotplug is few numbers: hugepage pools (total and free, per NUMA node), which CPUs
// are online, temperatures, RDMA port states. refreshLiveFacts re-reads just those sysfs files (the
// ones discovery read them from, hal/SysfsProbe.cpp) - a few dozen small reads - where a whole
// discovery (hwloc, sysfs, CUDA, verbs) took tens of milliseconds.
#pragma once

#include "hal/Topology.h"

#include <llvm/ADT/StringRef.h>

#include <optional>

namespace msc::hal {

enum class LiveRefresh {
  Unchanged,  // every re-read fact equals the topology's
  Changed,    // `updated` holds a copy of the topology with the new facts
  Rediscover, // the machine's shape changed (a CPU came online or went offline, a pool or a
              // sensor vanished): only a whole discovery describes it
};

// `root` is the sysfs root the topology was discovered from ("/" or a recorded tree).
LiveRefresh refreshLiveFacts(const Topology &current, llvm::StringRef root, std::optional<Topology> &updated);

} // namespace msc::hal
