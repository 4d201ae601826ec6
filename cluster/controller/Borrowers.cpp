#include "cluster/controller/Borrowers.h"

#include <algorithm>
#include <vector>

namespace msc::cluster {

std::optional<BorrowerAsk> borrowerAsk(const ir::Contract &contract) {
  const ir::ComputeFields &c = contract.body.compute;
  if (!c.class_ || c.class_->value != "opportunistic")
    return std::nullopt;
  return BorrowerAsk{c.cpu_cores ? unsigned(c.cpu_cores->value) : 0u,
                     c.gpu_sm_slices ? unsigned(c.gpu_sm_slices->value) : 0u,
                     c.rdma_qps ? unsigned(c.rdma_qps->value) : 0u};
}

BorrowerAsk borrowerAsk(const AssignedPlan &assigned) {
  if (!assigned.borrower())
    return {};
  const plan::Borrow &b = assigned.decoded->borrow();
  return {b.cpu_cores(), b.gpu_sm_slices(), b.rdma_queue_pairs()};
}

LentCapacity::LentCapacity(const ClusterState &state) : state_(state) {}

std::string LentCapacity::shortfall(const std::string &node, const BorrowerAsk &ask) const {
  if (state_.unreadableLending.count(node))
    return "its lending record does not read (ERR_CLUSTER_022)";
  auto record = state_.lending.find(node);
  if (record == state_.lending.end())
    return "its agent publishes no lending";
  const LendingRecord &r = record->second;
  if (r.owners == 0)
    return "no contract there lends";
  auto asked = asked_.find(node);
  BorrowerAsk taken = asked == asked_.end() ? BorrowerAsk{} : asked->second;
  auto left = [](unsigned has, unsigned taken) { return has > taken ? has - taken : 0u; };
  std::string borrowed = taken.cpus || taken.gpuUnits || taken.rdmaQueuePairs ? " not asked by the borrowers there" : "";
  if (left(r.cpus, taken.cpus) < ask.cpus)
    return "it lends " + std::to_string(left(r.cpus, taken.cpus)) + " CPUs" + borrowed + ", the borrower asks " +
           std::to_string(ask.cpus);
  if (left(r.gpuUnits, taken.gpuUnits) < ask.gpuUnits)
    return "it lends " + std::to_string(left(r.gpuUnits, taken.gpuUnits)) + " GPU units on one GPU" + borrowed +
           ", the borrower asks " + std::to_string(ask.gpuUnits);
  if (left(r.rdmaQueuePairs, taken.rdmaQueuePairs) < ask.rdmaQueuePairs)
    return "it lends " + std::to_string(left(r.rdmaQueuePairs, taken.rdmaQueuePairs)) + " RDMA queue pairs on one port" +
           borrowed + ", the borrower asks " + std::to_string(ask.rdmaQueuePairs);
  return {};
}

void LentCapacity::take(const std::string &node, const BorrowerAsk &ask) {
  BorrowerAsk &a = asked_[node];
  a.cpus += ask.cpus;
  a.gpuUnits += ask.gpuUnits;
  a.rdmaQueuePairs += ask.rdmaQueuePairs;
}

uint64_t LentCapacity::spare(const std::string &node, const BorrowerAsk &ask) const {
  auto record = state_.lending.find(node);
  if (record == state_.lending.end())
    return 0;
  const LendingRecord &r = record->second;
  auto asked = asked_.find(node);
  unsigned taken = asked == asked_.end() ? 0 : asked->second.cpus;
  unsigned left = r.cpus > taken ? r.cpus - taken : 0;
  // A borrower runs while all it asks for is lent: the scarcest of its resources' shares bounds it.
  uint32_t share = r.sharePermille;
  if (ask.gpuUnits)
    share = std::min(share, r.gpuSharePermille);
  if (ask.rdmaQueuePairs)
    share = std::min(share, r.rdmaSharePermille);
  return uint64_t(left) * share;
}

namespace {

// Whether `node` has a drain in force (not timed out): its borrowers leave at once.
bool draining(const ClusterState &state, const std::string &node) {
  auto d = state.drains.find(node);
  return d != state.drains.end() && !d->second.drain.timedOut;
}

} // namespace

std::map<std::string, std::string> borrowersToMove(const ClusterState &state, const std::set<std::string> &staying,
                                                   LentCapacity &lent) {
  std::map<std::string, std::string> moves;
  for (const auto &[contract, list] : state.assigned) {
    if (!staying.count(contract) || list.empty() || !list.front().borrower())
      continue;
    std::string cause;
    for (const AssignedPlan &a : list) {
      if (draining(state, a.node)) {
        cause = "drain of " + a.node + ": ";
        break;
      }
      if (std::string why = lent.shortfall(a.node, borrowerAsk(a)); !why.empty()) {
        cause = "node " + a.node + " lends no more what it asks (" + why + "): ";
        break;
      }
    }
    if (!cause.empty()) {
      moves[contract] = cause;
      continue;
    }
    for (const AssignedPlan &a : list)
      lent.take(a.node, borrowerAsk(a));
  }
  return moves;
}

PlacementResult placeBorrower(const ir::Contract &contract, const BorrowerAsk &ask, const ClusterState &state,
                              const NodeRegistry &registry, LentCapacity &lent, const std::string &compilerVersion,
                              DiagnosticEngine &diags) {
  Placer::Steering steering;
  steering.veto = [&](const NodeState &node) -> std::string {
    if (draining(state, node.name))
      return "no new placement (draining)";
    std::string shortfall = lent.shortfall(node.name, ask);
    return shortfall.empty() ? shortfall : "lends too little for a borrower: " + shortfall;
  };
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (const NodeState *node : registry.nodes())
    if (node->notPlaceable.empty() && steering.veto(*node).empty())
      ranked.push_back({lent.spare(node->name, ask), node->name});
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  for (unsigned i = 0; i < ranked.size(); ++i)
    steering.rank[ranked[i].second] = i;
  Placer placer(registry, compilerVersion);
  placer.steer(std::move(steering));
  PlacementResult placed = placer.place(contract, diags);
  for (const NodePlacement &p : placed.nodes)
    lent.take(p.node->name, ask);
  return placed;
}

} // namespace msc::cluster
