// What placement resolved about a contract on one node: the concrete CPUs, NUMA nodes, GPUs,
// block devices and RDMA ports behind each role. Built once by place() (passes/Resolve.h); passes
// read it, lowering turns it into a plan.
#pragma once

#include "admission/Rules.h"
#include "support/PciAddress.h"

#include <llvm/ADT/ArrayRef.h>

#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::passes {

struct GpuPlacement {
  unsigned index = 0;        // CUDA_DEVICE_ORDER=PCI_BUS_ID numbering
  PciAddress pci;
  std::string model;
  unsigned smCount = 0;      // of the whole GPU; 0 when the topology does not say
  unsigned smGranularity = 0; // smallest SM partition (green contexts); 0 unknown
  uint64_t memoryBytes = 0;  // of the whole GPU; 0 unknown
  std::optional<unsigned> numaNode;
};

struct RolePlacement {
  std::string role;
  std::vector<unsigned> cpus;          // logical CPUs, as the contract lists them
  std::vector<unsigned> physicalCores; // one PU os index per physical core (its first PU)
  std::optional<unsigned> numaNode;    // where the role's CPUs and memory live
  std::optional<GpuPlacement> gpu;
  unsigned smSlices = 0;               // slices of the GPU this role holds
  std::string blockDevice;             // "nvme0n1p1"
  std::optional<PciAddress> blockPci;  // its NVMe controller
  std::string rdmaDevice;
  unsigned rdmaPort = 0;
  std::optional<unsigned> rdmaNumaNode;
  std::optional<unsigned> poolNumaNode; // hugepage pool's node
  // What binding chose for `gpu = any`, `rdma_port = nearest`, `cpu_cores = N local`, and why
  // ("any; PIX with mlx5_2"); empty for what the contract names (passes/Binding.h).
  std::string gpuBound, rdmaBound, cpusBound;
};

struct Placement {
  std::vector<RolePlacement> roles;

  RolePlacement &role(llvm::StringRef name);
  const RolePlacement *findRole(llvm::StringRef name) const;
  // `--print-after`: a stable text form, with the passes' decisions so far.
  void print(llvm::raw_ostream &os, llvm::ArrayRef<admission::HugepageReservation> reservations = {}) const;
};

} // namespace msc::passes
