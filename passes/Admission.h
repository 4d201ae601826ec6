// What contracts already admitted on a node hold. Built from their plans (or a state file) by
// the caller; the admission pass refuses a contract that would double-book any of it.
#pragma once

#include "support/PciAddress.h"

#include <cstdint>
#include <string>
#include <vector>

namespace msc::passes {

struct Holding {
  std::string contract;
  std::vector<unsigned> physicalCores; // first PU of each held core
  struct Gpu {
    PciAddress pci;
    unsigned sms = 0;
    uint64_t memoryBytes = 0;
  };
  std::vector<Gpu> gpus;
  struct Hugepages {
    unsigned numaNode = 0;
    uint64_t pageSize = 0;
    uint64_t pages = 0;
  };
  std::vector<Hugepages> hugepages;
  struct QueuePairs {
    std::string device;
    unsigned count = 0;
  };
  std::vector<QueuePairs> queuePairs;
};

struct AdmittedSet {
  std::vector<Holding> holdings;
};

} // namespace msc::passes
