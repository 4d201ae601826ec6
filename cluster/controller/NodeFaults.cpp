#include "cluster/controller/NodeFaults.h"

#include "support/Units.h"

#include <llvm/ADT/STLExtras.h>

namespace msc::cluster {
namespace {

bool recorded(const std::string &node, const std::string &id, const ClusterState &state) {
  auto history = state.faults.find(node);
  return history != state.faults.end() &&
         llvm::any_of(history->second.faults, [&](const NodeFault &f) { return f.id == id; });
}

} // namespace

std::vector<NodeFault> workerFaults(const std::string &node, const ClusterState &state, int64_t nowUnixMs) {
  std::vector<NodeFault> out;
  auto statuses = state.statuses.find(node);
  if (statuses == state.statuses.end())
    return out;
  for (const auto &[contract, status] : statuses->second) {
    if (status.faults <= 0)
      continue;
    auto assigned = state.assigned.find(contract);
    if (assigned == state.assigned.end())
      continue;
    auto here = llvm::find_if(assigned->second, [&](const AssignedPlan &a) { return a.node == node; });
    if (here == assigned->second.end() || here->assignment.leaderRevision != status.leaderRevision)
      continue; // a status of an assignment gone or replaced: its faults were counted while it was
    if (here->borrower())
      continue;
    const std::string prefix = "worker:" + contract + ":" + std::to_string(status.leaderRevision) + ":";
    for (int64_t n = 1; n <= status.faults; ++n) {
      std::string id = prefix + std::to_string(n);
      if (recorded(node, id, state))
        continue;
      // The agent says the last fault's words; those it had before the leader looked are counted.
      std::string text = n == status.faults && !status.lastFault.empty()
                             ? status.lastFault
                             : "worker fault " + std::to_string(n) + " of its assignment";
      out.push_back({nowUnixMs, std::move(id), contract + ": " + text});
    }
  }
  return out;
}

std::optional<NodeFault> lostFault(const std::string &contract, const AssignedPlan &a, const ClusterState &state,
                                   int64_t nowUnixMs) {
  std::string id =
      "lost:" + contract + ":" + std::to_string(a.assignment.leaderRevision) + ":" + std::to_string(a.modRevision);
  if (a.borrower() || recorded(a.node, id, state))
    return std::nullopt;
  return NodeFault{nowUnixMs, std::move(id), contract + ": node lost (its workers with it)"};
}

std::optional<std::string> lemonReason(const std::vector<NodeFault> &faults, const ClusterConfig::Lemon &rule,
                                       int64_t nowUnixMs) {
  const int64_t since = nowUnixMs - int64_t(rule.withinNs / 1'000'000);
  std::vector<const NodeFault *> counted;
  for (const NodeFault &f : faults)
    if (f.isUncordonMark())
      counted.clear(); // the operator looked at the node then: what came before is judged
    else if (f.unixMs > since)
      counted.push_back(&f);
  if (rule.faults == 0 || counted.size() < rule.faults)
    return std::nullopt;
  std::string reason = "lemon: " + std::to_string(counted.size()) + " faults within " +
                       formatDuration(Nanoseconds{rule.withinNs}) + ":";
  // The newest the rule asks for, oldest first; the ones before them are counted, not spelt.
  size_t first = counted.size() - rule.faults;
  for (size_t i = first; i < counted.size(); ++i)
    reason += std::string(i == first ? " " : "; ") + counted[i]->text;
  if (first)
    reason += " (and " + std::to_string(first) + " before)";
  return reason;
}

} // namespace msc::cluster
