// The compile side of the claims value: what a contract's roles take on the node its placement
// resolved, each claim pointing at the contract text that asked for it.
#pragma once

#include "admission/Claims.h"
#include "hal/Topology.h"
#include "ir/IR.h"
#include "passes/Placement.h"

namespace msc::passes {

// `topology` may be null (a node-less compile): claims then carry what the contract says alone.
admission::Claims claimsOf(const ir::Contract &contract, const Placement &placement, const hal::Topology *topology);

} // namespace msc::passes
