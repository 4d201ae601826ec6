// How the ranks of a multi-node job find each other: the variables torchrun gives every rank
// (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR, MASTER_PORT), decided by
// the leader for each placement and carried in each node's assignment. One worker runs per node of
// a cluster job, so a node's rank is the job's rank. The port is fresh at every placement: workers
// of the old placement may still hold the previous one (TIME_WAIT, a rank being stopped).
#pragma once

#include "cluster/controller/ClusterState.h"
#include "ir/WorldSize.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msc::cluster {

// The ports rendezvous uses: torchrun's default and the 999 above it.
inline constexpr uint16_t kRendezvousPortBase = 29500;
inline constexpr uint16_t kRendezvousPorts = 1000;

// The port of a new placement of `contract`: the one after the port its previous placement used
// (`previous`, its assignments; wrapping within the range), or one the contract's name picks.
uint16_t rendezvousPort(const std::string &contract, const std::vector<AssignedPlan> &previous);

// The variables of the rank on the `nodeRank`-th of `nodes` nodes; rank 0 listens on
// `masterAddress`:`masterPort`.
std::map<std::string, std::string> rendezvousEnvironment(unsigned nodeRank, unsigned nodes,
                                                         const std::string &masterAddress, uint16_t masterPort);

// What each rank's share of the job's global batch is at the size placed (ir/WorldSize.h):
// MSCALE_GLOBAL_BATCH, MSCALE_RANK_BATCH (samples per rank per step), MSCALE_MICRO_BATCH and
// MSCALE_ACCUMULATION_STEPS (micro-batches per rank per step), and MSCALE_DETERMINISTIC_REDUCTION=1
// when the contract asks for it. Empty for a job that sets no global batch.
std::map<std::string, std::string> batchEnvironment(const ir::WorldSizes &sizes, unsigned worldSize);

} // namespace msc::cluster
