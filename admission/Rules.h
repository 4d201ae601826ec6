// The rules that decide whether a node can honour a contract's claims. One function per kind of
// resource, each over (claims, topology, what is already held); the compiler's passes, the node's
// re-check of a plan and a cluster controller all call these, so one problem has one code.
//
// Diagnostics point at the claim's source range where it has one, else at the context's fallback
// (the plan's name). Notes and fix-its come from the topology, so both sides print the same advice.
#pragma once

#include "admission/Claims.h"
#include "hal/Topology.h"
#include "support/Diagnostic.h"

#include <cstdint>
#include <vector>

namespace msc::admission {

struct RuleContext {
  const hal::Topology &topology;
  DiagnosticEngine &diags;
  Location fallback; // where a claim without a source range is reported (the plan file)

  Location at(const Location &claimed) const {
    return claimed.hasRange() || !claimed.file.empty() ? claimed : fallback;
  }
};

// NUMA nodes exist; CPUs exist, are online, are not isolated (isolcpus=, nohz_full=), sit on the
// role's NUMA node; no two roles share a physical core; a role that lists SMT siblings is warned.
void checkCpus(const Claims &claims, const RuleContext &ctx);

// GPUs exist; slices fit the contract's division, partitions fit the architecture's green-context
// granularity, no slice holds more SMs than the GPU has (a plan from a bigger GPU), memory fits; a
// GPU that does not report its SMs or memory is warned about.
void checkGpus(const Claims &claims, const RuleContext &ctx);

// The memory one contract claims on one GPU: the sum of its roles' own limits, else its per-GPU
// gpu_memory once. Saturates instead of wrapping, so a huge claim cannot sum to a small one.
uint64_t gpuMemoryOf(const Claims &claims, const PciAddress &gpu);

// Hugepage pools: a page size the node has, enough free pages on the pool's NUMA node. A pool that
// may reserve gets its shortfall planned instead of refused.
struct HugepageReservation {
  std::string role;
  uint64_t pages = 0;
};
std::vector<HugepageReservation> checkHugepages(const Claims &claims, const RuleContext &ctx);
// The NUMA node a pool lives on: as claimed, else the node's only NUMA node.
std::optional<unsigned> poolNode(const hal::Topology &topo, const HugepageClaim &pool);

// Block devices exist as written and io_depth fits their controller's queue.
void checkBlockDevices(const Claims &claims, const RuleContext &ctx);

// RDMA devices and ports exist (the failover port too) and are active with the link layer asked
// for; a role's hugepage pool sits on its NIC's NUMA node.
void checkRdmaPorts(const Claims &claims, const RuleContext &ctx);

// Nothing the claims take is held by an admitted contract: the contract name, physical cores, GPU
// SMs and memory, hugepages on the pool's node (beyond the planned reservations), RDMA queue pairs.
void checkAgainstHeld(const Claims &claims, const Held &held, const RuleContext &ctx,
                      const std::vector<HugepageReservation> &reservations = {});

// Who already holds a resource, for placement that binds unnamed requests (`gpu = any`,
// `cpu_cores = N local`) around what is admitted: the first admitted contract holding a slice of
// the GPU, or the physical core (named by its first PU); null when none does.
const Claims *gpuHolder(const Held &held, const PciAddress &gpu);
const Claims *coreHolder(const Held &held, unsigned core);

} // namespace msc::admission
