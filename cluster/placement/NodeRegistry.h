// The nodes a controller may place jobs on: each one's topology, what the plans already admitted
// there hold, and the PCIe domains reserved there. Placement (Placer.h) reads it; whoever admits a plan on a node (the controller, the
// mscale-place tool) records it here, so the next placement sees the node as it now is.
#pragma once

#include "admission/Claims.h"
#include "cluster/placement/Reservation.h"
#include "hal/Topology.h"
#include "plan/plan.pb.h"
#include "support/Diagnostic.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msc::cluster {

// What is left on a node, counted once per change of the node and not per placement: the
// prefilter compares it with what a contract needs before any node's full check runs.
struct NodeCapacity {
  unsigned freeGpus = 0;   // GPUs no admitted plan (nor a reservation) holds
  unsigned freeCores = 0;  // physical cores no admitted plan holds (online or not: the check decides)
  unsigned usableHcas = 0; // RDMA devices with a port that is up or of unknown state, not reserved
  // Of what the node has, what its reserved PCIe domains take (Reservation.h): said in the reasons.
  unsigned reservedGpus = 0, reservedHcas = 0;
};

struct NodeState {
  std::string name;
  // Shared: 1,000 simulated nodes of a dozen recorded machines need a dozen topologies, and a
  // Topology is expensive to copy (Boost 1.74's adjacency_list copies itself even on a move).
  std::shared_ptr<const hal::Topology> topology;
  std::vector<plan::Plan> admitted;
  Reservation reservation; // PCIe domains no job may use
  // The admitted plans' claims (admission::heldByPlans), then the reservation's
  // (reservationClaims): what the node's check sees held.
  admission::Held held;
  // The admitted plans' bytes, in order, and the reserved domains: two nodes sharing one topology
  // object and one heldKey are the same input to the node's check, so placement checks such a
  // class of nodes once.
  std::string heldKey;
  NodeCapacity capacity;
  // Why placement takes no new job here ("cordoned by operator: ...", "health failed: ..."); empty:
  // placeable. The admitted plans still hold their resources: what runs here stays.
  std::string notPlaceable;
};

// What a topology offers with `held` and the reserved domains taken away.
NodeCapacity capacityOf(const hal::Topology &topology, const admission::Held &held,
                        const Reservation &reservation = {});

class NodeRegistry {
public:
  // Registers a node; ERR_PLACE_004 when the name is taken (the first registration stays).
  bool add(std::string name, std::shared_ptr<const hal::Topology> topology, DiagnosticEngine &diags);
  // Records a plan admitted on `node` (ERR_PLACE_003 for a name not registered; `what` says where the
  // name came from, e.g. "--admitted"). Recorded topologies still count the plan's hugepages free.
  bool admit(llvm::StringRef node, plan::Plan plan, llvm::StringRef what, DiagnosticEngine &diags);
  // Reserves PCIe domains of `node` (replacing what was reserved there): their devices count as
  // held from now on, and placement refuses a job that would use one (Reservation.h).
  // ERR_PLACE_003 for a name not registered.
  bool reserve(llvm::StringRef node, Reservation reservation, DiagnosticEngine &diags);
  // Takes `node` out of placement for `why` (NodeState::notPlaceable; the first reason given stays,
  // later ones are added after it). ERR_PLACE_003 for a name not registered.
  bool exclude(llvm::StringRef node, const std::string &why, DiagnosticEngine &diags);

  const NodeState *find(llvm::StringRef name) const;
  // By name: the order every tie in a placement falls back on.
  const std::vector<const NodeState *> &nodes() const { return ordered_; }
  size_t size() const { return byName_.size(); }

private:
  // ERR_PLACE_003 with the closest registered name; `what` says where the name came from.
  void reportUnknown(llvm::StringRef name, llvm::StringRef what, DiagnosticEngine &diags) const;
  // held, heldKey and capacity from the node's admitted plans and reservation.
  static void refresh(NodeState &node);

  std::map<std::string, std::unique_ptr<NodeState>, std::less<>> byName_;
  std::vector<const NodeState *> ordered_;
};

} // namespace msc::cluster
