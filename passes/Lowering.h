// Lowering: a checked contract and its placement on a node become an execution plan. Also the
// way back from a plan to what it holds, for admission of the next contract.
#pragma once

#include "hal/Topology.h"
#include "ir/IR.h"
#include "ir/plan.pb.h"
#include "passes/Admission.h"
#include "passes/Placement.h"

#include <llvm/ADT/StringRef.h>

namespace msc::passes {

// Defaults for what neither the contract nor its profiles say (docs/contract_language.md).
struct PlanDefaults {
  static constexpr uint32_t keepSnapshots = 3;
  static constexpr uint64_t heartbeatNs = 200'000'000;
  static constexpr uint32_t heartbeatMisses = 3;
  static constexpr uint32_t deviationPpm = 150'000;
  static constexpr int64_t scaleUpBelowMc = 70'000;
  static constexpr int64_t throttleAtMc = 75'000;
  static constexpr int64_t hysteresisMc = 2'000;
  static constexpr uint64_t windowNs = 10'000'000'000;
  static constexpr uint32_t windows = 3;
  static constexpr uint64_t cooldownNs = 60'000'000'000;
};

// Queue pairs a role's RDMA setting creates: the role's queue_pairs, else the profile's rdma_qps,
// at least one. Lowering and admission both count with this.
uint32_t queuePairsOf(const ir::Contract &contract, const ir::Role &role);

// Deterministic: the same contract, placement and topology give the same plan.
plan::Plan lowerToPlan(const ir::Contract &contract, const Placement &placement, const hal::Topology &topology,
                       llvm::StringRef compilerVersion);

// What an admitted plan holds on its node.
Holding holdingFromPlan(const plan::Plan &plan);

} // namespace msc::passes
