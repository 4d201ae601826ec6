// The claims of one contract on one node: what it takes (CPUs and their physical cores, NUMA
// nodes, GPU slices and memory, hugepages, block devices and their queues, RDMA ports and queue
// pairs). A hardware-neutral value with no contract IR in it, built from either side: from the
// IR and its placement when compiling (passes/ContractClaims.h), from a plan on the node
// (claimsFromPlan). The rules (admission/Rules.h) judge claims against a topology and what other
// contracts already hold, so the compiler, the node's re-check and a cluster controller refuse the
// same problem with the same code.
#pragma once

#include "plan/plan.pb.h"
#include "support/Diagnostic.h"
#include "support/PciAddress.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::admission {

// Where each claim was written. Compile-side claims point into the contract source; claims read
// from a plan have no range, and the rules fall back to the plan's name (RuleContext::fallback).
// Equality compares every member: the test that both sides build the same claims relies on it.
struct GpuClaim {
  PciAddress pci;
  std::string written;   // as the contract or plan names it, for messages (empty: the PCI address)
  bool found = true;     // false: the contract named a GPU the placement could not resolve
  unsigned slices = 0;   // slices the role asks for; 0: it takes the GPU undivided
  unsigned division = 1; // equal slices the contract divides each GPU into
  Location divisionAt;   // where that division is set, and by which declaration
  std::string divisionSetBy;
  unsigned sms = 0;      // SMs those slices hold (0: the topology does not know the SM count)
  uint64_t memoryBytes = 0;
  // The memory is the contract's gpu_memory "on each GPU it uses", shared by its roles on this
  // GPU, rather than the role's own: it counts once per GPU (gpuMemoryOf).
  bool memoryPerGpu = false;
  Location at;
  bool operator==(const GpuClaim &) const = default;
};

struct HugepageClaim {
  std::optional<unsigned> numaNode; // where the pool lives; unknown on a node-less compile
  uint64_t pageSize = 0;
  uint64_t pages = 0;
  enum class Shortfall : uint8_t {
    Refuse,             // too few free pages is an error (auto_allocate_hugepages off)
    Reserve,            // the shortfall is reserved when the plan is applied
    RefusedByNodeConfig // the plan would reserve, the node's config forbids it
  } shortfall = Shortfall::Refuse;
  Location at;
  // Why the pool lives on `numaNode` when that is not the role's own node ("NUMA node 0 is RDMA
  // device 'mlx5_0''s, which the pool is registered with"); empty otherwise.
  std::string nodeWhy = {};
  bool operator==(const HugepageClaim &) const = default;
};

struct BlockClaim {
  std::string device;               // "nvme0n1p1"
  std::string written;              // "/dev/nvme0n1p1"
  uint32_t ioDepth = 0;             // 0: not asked for
  Location at, ioDepthAt;
  bool operator==(const BlockClaim &) const = default;
};

struct RdmaPortClaim {
  std::string device;
  unsigned port = 0;                // 0: any port of the device (hwloc sources carry none)
  Location at;
  bool operator==(const RdmaPortClaim &) const = default;
};

struct RdmaClaim {
  RdmaPortClaim primary;
  std::optional<RdmaPortClaim> failover;
  uint32_t queuePairs = 1;
  std::string linkLayer;            // empty: any
  Location linkLayerAt;
  bool operator==(const RdmaClaim &) const = default;
};

struct RoleClaims {
  std::string role;
  std::vector<unsigned> cpus;           // logical CPUs, as written
  std::vector<unsigned> physicalCores;  // first PU of each core the CPUs are on
  Location cpusAt;
  std::optional<unsigned> numaNode;     // the NUMA node the role declares (or the plan binds)
  Location numaAt;
  std::optional<GpuClaim> gpu;
  std::optional<HugepageClaim> hugepages;
  std::optional<BlockClaim> block;
  std::optional<RdmaClaim> rdma;
  bool operator==(const RoleClaims &) const = default;
};

struct Claims {
  std::string contract;
  Location contractAt;
  std::vector<RoleClaims> roles;
  bool operator==(const Claims &) const = default;
};

// What the contracts already admitted on a node hold: their claims.
struct Held {
  std::vector<Claims> contracts;
  // On a live node the admitted pools are allocated, so the topology's free hugepages already
  // exclude them; on a recorded topology they are still counted free and must be subtracted.
  bool hugepagesTakenFromFree = false;
};

// A plan's claims, for the node's re-check and for the admission of the next contract.
Claims claimsFromPlan(const plan::Plan &plan);

} // namespace msc::admission
