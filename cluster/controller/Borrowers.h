// Borrowers across the cluster: contracts of `class = opportunistic` hold nothing and run on what
// other contracts' phases lend (executor/lending on each node). Their agents publish what their
// owners lend (/mscale/lending/<node>, Keys.h: LendingRecord); the leader decides here, purely:
//   - A borrower is placed only on a node that lends at least the CPUs and GPU units it asks for,
//     beyond what the borrowers placed there already ask (the lent CPUs are not promised twice),
//     placeable (not cordoned, failed) and not draining; the node with the most lent capacity to
//     spare first (CPUs left times the share of time they are lendable, or the share of the GPU
//     units or queue pairs it asks where that is less), then by name.
//   - It stays while its node lends that. It moves at once when the loan is taken back for good: its
//     node lends no more what it asks (the owner left, its record does not read, its agent is
//     gone: no record) or is drained ("borrowers are simply ended": its worker there is stopped,
//     and it resumes elsewhere from its own snapshot). A phase that takes CPUs back for a while is
//     the node's business, not the cluster's: the record's most lent stays the same.
//   - A borrower no node can take waits (refused, said once), and is placed once a node lends.
//   - Guaranteed contracts never wait for one: their placement does not see borrowers at all.
#pragma once

#include "cluster/controller/ClusterState.h"
#include "cluster/placement/NodeRegistry.h"
#include "cluster/placement/Placer.h"
#include "ir/IR.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace msc::cluster {

// What a borrower asks of the node it runs on.
struct BorrowerAsk {
  unsigned cpus = 0;
  unsigned gpuUnits = 0;
  unsigned rdmaQueuePairs = 0;
};
// nullopt for a contract that is no borrower.
std::optional<BorrowerAsk> borrowerAsk(const ir::Contract &contract);
// The same, from a placed borrower's assignment.
BorrowerAsk borrowerAsk(const AssignedPlan &assigned);

// What each node lends and what the borrowers there already ask, kept up to date through a round.
class LentCapacity {
public:
  explicit LentCapacity(const ClusterState &state);
  // Why `node` cannot take `ask` more; empty when it can.
  std::string shortfall(const std::string &node, const BorrowerAsk &ask) const;
  void take(const std::string &node, const BorrowerAsk &ask);
  // The lent capacity to spare on `node` for `ask`: CPUs left times the share of time they are
  // lendable, or that of the GPU units or queue pairs it asks for where that is smaller.
  uint64_t spare(const std::string &node, const BorrowerAsk &ask) const;

private:
  const ClusterState &state_;
  std::map<std::string, BorrowerAsk> asked_;
};

// The borrowers that stay where they are, their asks taken from `lent`, in name order (the older
// keeps its place); each one that must move is returned with its cause ("node n1 lends no more what
// it asks (...): "), as an event of the contract begins.
std::map<std::string, std::string> borrowersToMove(const ClusterState &state, const std::set<std::string> &staying,
                                                   LentCapacity &lent);

// Places `contract` (a borrower) on the nodes of `registry` that lend what it asks, the most spare
// first; each node that cannot take it says why in a refusal's notes. The asks of the nodes chosen
// are taken from `lent`. What the registry's nodes hold does not matter: a borrower holds nothing.
PlacementResult placeBorrower(const ir::Contract &contract, const BorrowerAsk &ask, const ClusterState &state,
                              const NodeRegistry &registry, LentCapacity &lent, const std::string &compilerVersion,
                              DiagnosticEngine &diags);

} // namespace msc::cluster
