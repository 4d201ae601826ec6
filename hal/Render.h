// Text and JSON views of a Topology for people and scripts: an lstopo-like tree with the devices
// that matter for training marked, and a health report (temperatures against limits, hugepages,
// RDMA ports and error counters, NVMe, and what this machine does not have).
#pragma once

#include "hal/Topology.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

namespace msc::hal {

struct TreeOptions {
  bool caches = false; // print cache vertices (lstopo does; the default view folds them away)
};

// One line per object; GPUs, RDMA NICs and NVMe are marked with '*' in the first column.
void printTree(const Topology &topology, llvm::raw_ostream &os, const TreeOptions &options = {});
llvm::json::Value topologyJson(const Topology &topology);

// Counts of the kinds that matter: packages, NUMA nodes, cores, PUs, GPUs, NICs, RDMA, NVMe.
struct Summary {
  size_t packages = 0, numaNodes = 0, cores = 0, pus = 0, gpus = 0, nics = 0, rdma = 0, nvme = 0;
};
Summary summarize(const Topology &topology);

// A sensor this close to its limit (ThermalInfo::limitMilliC) is reported as near it: WARN in
// printHealth, a degraded node in health/Judge.h. The one place this margin lives.
inline constexpr int64_t ThermalWarnMarginMilliC = 10000;

void printHealth(const Topology &topology, llvm::raw_ostream &os);
llvm::json::Value healthJson(const Topology &topology);

} // namespace msc::hal
