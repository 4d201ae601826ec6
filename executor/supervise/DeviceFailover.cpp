#include "executor/supervise/DeviceFailover.h"

#include "admission/SliceBinding.h"

#include <algorithm>

namespace msc::exec {

std::vector<hal::GpuRef> failoverCandidates(const hal::Topology &node, unsigned lost, int lostNuma) {
  std::vector<hal::GpuRef> candidates;
  for (const hal::GpuRef &g : node.gpus())
    if (g.index != lost)
      candidates.push_back(g);
  auto local = [&](const hal::GpuRef &g) {
    std::optional<unsigned> numa = node.numaNodeOfDevice(g.vertex);
    return numa && int(*numa) == lostNuma;
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const hal::GpuRef &a, const hal::GpuRef &b) { return local(a) && !local(b); });
  return candidates;
}

plan::Plan planMovedTo(const plan::Plan &current, unsigned lost, const hal::Topology &node, const hal::GpuRef &to) {
  plan::Plan next = current;
  for (plan::GpuSlice &g : *next.mutable_gpu_slices())
    if (g.gpu_index() == lost)
      admission::bindSliceToGpu(g, node, to);
  return next;
}

std::string roleOnGpu(const plan::Plan &plan, unsigned gpu) {
  std::string role;
  for (const plan::GpuSlice &g : plan.gpu_slices())
    if (g.gpu_index() == gpu)
      role = g.role();
  return role;
}

GpuFailover moveOffLostGpu(const plan::Plan &current, unsigned lost, const hal::Topology &node,
                           const FailoverAttempt &tryPlan) {
  GpuFailover out;
  out.role = roleOnGpu(current, lost);
  int lostNuma = -1;
  for (const plan::GpuSlice &g : current.gpu_slices())
    if (g.gpu_index() == lost)
      lostNuma = g.numa_node();
  std::vector<hal::GpuRef> candidates = failoverCandidates(node, lost, lostNuma);
  if (candidates.empty()) {
    out.why = "the node has no other GPU";
    return out;
  }
  for (const hal::GpuRef &c : candidates) {
    std::optional<std::string> refused = tryPlan(c, planMovedTo(current, lost, node, c));
    if (!refused) {
      out.moved = true;
      out.to = c.index;
      out.why.clear();
      return out;
    }
    out.why += (out.why.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(c.index) + ": " + *refused;
  }
  return out;
}

} // namespace msc::exec
