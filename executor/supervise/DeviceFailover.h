// Moving a job off a GPU it lost: which of the node's other GPUs its slices go to. The lost GPU's
// slices are bound anew to each candidate in turn (admission/SliceBinding.h: the candidate's SMs
// and mechanism, whatever its architecture) and offered to `tryPlan`, the supervisor's re-check and
// hand-over, until one takes. The room decides the order and the binding; the node is read and
// changed only through its arguments, so the decision runs without a GPU or a process.
#pragma once

#include "hal/Topology.h"
#include "plan/plan.pb.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

// The node's GPUs other than `lost`, those on `lostNuma` first (the role's CPUs and memory stay
// local), then in index order.
std::vector<hal::GpuRef> failoverCandidates(const hal::Topology &node, unsigned lost, int lostNuma);

// The (last) role of `plan` with a slice on GPU `gpu`, "" when none has one: what a refusal names.
std::string roleOnGpu(const plan::Plan &plan, unsigned gpu);

// `current` with every slice of GPU `lost` bound to `to`.
plan::Plan planMovedTo(const plan::Plan &current, unsigned lost, const hal::Topology &node, const hal::GpuRef &to);

struct GpuFailover {
  bool moved = false;
  unsigned to = 0;         // moved: the GPU the slices went to
  std::string role;        // the (last) role whose slice was on the lost GPU
  std::string why;         // not moved: "the node has no other GPU", or each candidate's refusal
};

// Offers the plan moved to each candidate to `tryPlan`, which answers nullopt when it took the plan
// (re-checked and handed over) or why not.
using FailoverAttempt = std::function<std::optional<std::string>(const hal::GpuRef &to, const plan::Plan &next)>;
GpuFailover moveOffLostGpu(const plan::Plan &current, unsigned lost, const hal::Topology &node,
                           const FailoverAttempt &tryPlan);

} // namespace msc::exec
