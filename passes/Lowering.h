// Lowering: a checked contract, its placement on a node and the passes' decisions become an
// execution plan. (The way back, from a plan to its claims, is admission/Claims.h.)
#pragma once

#include "hal/Topology.h"
#include "ir/IR.h"
#include "plan/plan.pb.h"
#include "passes/Pass.h"
#include "passes/Placement.h"

#include <llvm/ADT/StringRef.h>

namespace msc::passes {

// Queue pairs a role's RDMA setting creates: the role's queue_pairs, else the profile's rdma_qps,
// at least one. Lowering and admission both count with this.
uint32_t queuePairsOf(const ir::Contract &contract, const ir::Role &role);

// Deterministic: the same contract, placement and topology give the same plan.
plan::Plan lowerToPlan(const ir::Contract &contract, const Placement &placement, const PlanDecisions &decisions,
                       const hal::Topology &topology, llvm::StringRef compilerVersion);

} // namespace msc::passes
