// What a contract asks of each node, read once per placement from the checked IR: the counts the
// prefilter compares with a node's capacity, and whether the job is IO-heavy (the scaling policy
// of docs/placement.md decides from that how devices may be paired).
#pragma once

#include "cluster/placement/NodeRegistry.h"
#include "ir/IR.h"
#include "ir/WorldSize.h"

#include <string>

namespace msc::cluster {

struct JobShape {
  unsigned nodes = 1;      // the most nodes the job runs on (the contract's `nodes`, or its range's MAX)
  ir::WorldSizes sizes;    // the sizes it may run at, and its global batch (ir/WorldSize.h)
  unsigned gpus = 0;       // roles with a GPU (named or `any`): a role holds a GPU of its own or slices of it
  unsigned anyGpus = 0;    // of those, `gpu = any`; a role of `gpus = N` counts as N
  unsigned localCores = 0; // sum of `cpu_cores = N local`, once per copy of a `gpus = N` role
  bool wantsHca = false;   // a role asks for `rdma_port = nearest`
  // IO-heavy: a role reads an NVMe (io_queue) or uses GPU Direct Storage, or the contract itself
  // forbids cross-domain IO. Such a job is only ever placed with GPU, HCA and NVMe under one root
  // complex per role; a compute-heavy one may fall back to crossing domains.
  bool ioHeavy = false;
  std::string ioReason; // "role 'loader' reads /dev/nvme0n1" (for the summary and the docs)
};

JobShape shapeOf(const ir::Contract &contract);

// Whether a node can possibly honour the job, from counts alone; never false for a node the full
// check would accept (it only counts what binding itself would need free). Empty when it may;
// else why not ("2 free GPUs, the job needs 4 per node").
std::string prefilter(const JobShape &shape, const NodeCapacity &capacity);

// The contract under the strict policy: affinity_policy = pcie_domain_first where the contract
// does not choose one, and cross_domain_io = false. Both are marked as set by placement.
ir::Contract strictVariant(const ir::Contract &contract);

} // namespace msc::cluster
