#include "cluster/placement/NodeRegistry.h"

#include "admission/PlanRecheck.h"
#include "admission/Rules.h"
#include "passes/Resolve.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <set>

namespace msc::cluster {

NodeCapacity capacityOf(const hal::Topology &topology, const admission::Held &held, const Reservation &reservation) {
  NodeCapacity c;
  ReservedCounts reserved = reservedCounts(topology, reservation);
  c.reservedGpus = reserved.gpus;
  c.reservedHcas = reserved.hcas;
  for (const hal::GpuRef &gpu : topology.gpus())
    if (!admission::gpuHolder(held, gpu.info->pci))
      ++c.freeGpus;
  for (unsigned core : topology.firstPusOfCores())
    if (!admission::coreHolder(held, core))
      ++c.freeCores;
  for (hal::VertexId v : topology.verticesOf(hal::VertexKind::RdmaDevice))
    if (passes::hasUsablePort(topology, v))
      ++c.usableHcas;
  // Reserved GPUs are held (reservationClaims) and so not counted free above; reserved HCAs are not
  // held by anything binding looks at, so they come off here.
  c.usableHcas -= std::min(c.usableHcas, c.reservedHcas);
  return c;
}

bool NodeRegistry::add(std::string name, std::shared_ptr<const hal::Topology> topology, DiagnosticEngine &diags) {
  if (byName_.count(name)) {
    diags.report(DiagCode::ERR_PLACE_004) << name;
    return false;
  }
  auto node = std::make_unique<NodeState>();
  node->name = name;
  node->topology = std::move(topology);
  node->capacity = capacityOf(*node->topology, node->held);
  // In name order, as byName_: callers add a cluster's nodes in that order, so this is an append,
  // not the whole list again per node (a 2,000-node registry was built in quadratic time).
  NodeState *added = node.get();
  auto at = std::lower_bound(ordered_.begin(), ordered_.end(), added->name,
                             [](const NodeState *n, const std::string &key) { return n->name < key; });
  ordered_.insert(at, added);
  byName_.emplace(std::move(name), std::move(node));
  return true;
}

void NodeRegistry::reportUnknown(llvm::StringRef name, llvm::StringRef what, DiagnosticEngine &diags) const {
  DiagBuilder d = diags.report(DiagCode::ERR_PLACE_003);
  d << name << what;
  std::vector<llvm::StringRef> names;
  for (const auto &[known, node] : byName_)
    names.push_back(known);
  if (std::optional<std::string> near = closestMatch(name, names))
    d.note(Location::none(), "did you mean '" + *near + "'?");
  d.note(Location::none(), names.empty() ? std::string("no node is registered")
                                         : "registered nodes: " + llvm::join(names, ", "));
}

void NodeRegistry::refresh(NodeState &node) {
  std::vector<const plan::Plan *> plans;
  node.heldKey.clear();
  for (const plan::Plan &p : node.admitted) {
    plans.push_back(&p);
    node.heldKey += p.SerializeAsString();
  }
  // As the compiler does with --admitted: a recorded topology cannot know whether it was taken
  // before or after the admitted pools were allocated, so they are subtracted from the free pages.
  node.held = admission::heldByPlans(plans, /*hugepagesTakenFromFree=*/false);
  for (admission::Claims &c : reservationClaims(*node.topology, node.reservation))
    node.held.contracts.push_back(std::move(c));
  for (const PciBus &domain : node.reservation.domains)
    node.heldKey += "\nreserved " + domain.str() + " by " + node.reservation.by;
  node.capacity = capacityOf(*node.topology, node.held, node.reservation);
}

bool NodeRegistry::admit(llvm::StringRef name, plan::Plan plan, llvm::StringRef what, DiagnosticEngine &diags) {
  auto it = byName_.find(name);
  if (it == byName_.end()) {
    reportUnknown(name, what, diags);
    return false;
  }
  it->second->admitted.push_back(std::move(plan));
  refresh(*it->second);
  return true;
}

bool NodeRegistry::reserve(llvm::StringRef name, Reservation reservation, DiagnosticEngine &diags) {
  auto it = byName_.find(name);
  if (it == byName_.end()) {
    reportUnknown(name, "a reservation of PCIe domains", diags);
    return false;
  }
  it->second->reservation = std::move(reservation);
  refresh(*it->second);
  return true;
}

bool NodeRegistry::exclude(llvm::StringRef name, const std::string &why, DiagnosticEngine &diags) {
  auto it = byName_.find(name);
  if (it == byName_.end()) {
    reportUnknown(name, "a node taken out of placement", diags);
    return false;
  }
  std::string &notPlaceable = it->second->notPlaceable;
  notPlaceable += (notPlaceable.empty() ? "" : "; ") + why;
  return true;
}

const NodeState *NodeRegistry::find(llvm::StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second.get();
}

} // namespace msc::cluster
