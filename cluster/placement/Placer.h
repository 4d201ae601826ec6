// Placement of a checked contract across the registered nodes: chooses the job's `nodes = N`
// distinct nodes and produces one plan per node; an elastic job (`nodes = MIN..MAX`) gets the largest
// size allowed by its global batch (ir/WorldSize.h) that it can place whole, MIN at the fewest. Each candidate node is decided by exactly the
// compiler's pipeline (PassManager::check: binding, placement, claims, the admission rules against
// what the node holds; then lowerToPlan), so a node accepts here what `mscalec --topology NODE
// --admitted ...` accepts, and the node agent's re-check agrees.
//
// Order (deterministic: same registry and contract, same nodes and bytes): nodes that pass the
// prefilter (JobShape.h), best fit first (fewest GPUs left free after the job, then fewest cores),
// then by name; the first N that the check accepts are chosen. A node out of placement
// (NodeState::notPlaceable: cordoned, failed) is turned away before the prefilter, and a refusal
// names it with its reason in a note, as it names the prefilter's. The scaling policy: every job is
// first tried with each role's GPU, HCA and NVMe under one root complex; an IO-heavy job stops
// there, a compute-heavy one then tries the nodes still missing with the contract as written
// (crossing PCIe domains where that is all that fits), and the result says which nodes did.
#pragma once

#include "cluster/placement/JobShape.h"
#include "cluster/placement/NodeRegistry.h"
#include "ir/IR.h"
#include "passes/PassManager.h"
#include "plan/plan.pb.h"
#include "support/Diagnostic.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace msc::cluster {

// What binding chose for a role on a node, and why ("any; PIX with mlx5_2"); empty for what the
// contract names itself.
struct RoleSummary {
  std::string role, gpu, rdma, cpus;
};

struct NodePlacement {
  const NodeState *node = nullptr;
  plan::Plan plan;
  std::vector<RoleSummary> roles;
  bool crossedDomains = false; // placed only with the contract's own policy (compute-heavy fallback)
};

struct PlacementResult {
  std::vector<NodePlacement> nodes; // the job's nodes in the order chosen (its world size); empty when not placed
  JobShape shape;
  unsigned checked = 0;     // full checks run (once per class of like nodes and policy variant)
  unsigned prefiltered = 0; // nodes the prefilter turned away
  bool placed() const { return !nodes.empty(); }
};

class Placer {
public:
  explicit Placer(const NodeRegistry &registry, std::string compilerVersion);

  // Places `contract` (the frontend's checked IR: parse and resolve it once, e.g. with
  // driver::loadContracts). ERR_PLACE_002 when the job needs more nodes than are registered (an
  // elastic job: its fewest), ERR_PLACE_001 (naming the node that came closest, with a note per
  // other node) when fewer than it needs can honour it. Warnings of the chosen nodes' checks are reported once each.
  PlacementResult place(const ir::Contract &contract, DiagnosticEngine &diags);
  // What a caller knows of the nodes that the registry's counts of what is held cannot say: a
  // borrower goes only where enough is lent, the most spare first (cluster/controller/Borrowers.h).
  struct Steering {
    // Nodes with a lower rank first, before best fit; a node not ranked comes after every ranked one.
    std::map<std::string, unsigned, std::less<>> rank;
    // Why a node takes not this job (empty: it may). Such a node is turned away before the
    // prefilter, and a refusal names it with the reason, as it names a cordoned one.
    std::function<std::string(const NodeState &)> veto;
  };
  void steer(Steering steering) { steering_ = std::move(steering); }

private:
  const NodeRegistry &registry_;
  std::string version_;
  passes::PassManager pipeline_;
  Steering steering_;
};

} // namespace msc::cluster
