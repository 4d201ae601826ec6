#include "cluster/placement/Placer.h"

#include "passes/GpuCount.h"
#include "ir/ValueFormat.h"
#include "passes/Lowering.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace msc::cluster {

namespace {

// At most this many nodes are named one by one in the notes of ERR_PLACE_001; 1,000 nodes that all
// fail would bury the reason, so the rest are counted.
constexpr size_t kNamedNodes = 8;

struct Candidate {
  const NodeState *node;
  unsigned spareGpus, spareCores; // left free after the job: best fit takes the smallest
};

// What one node's check gave: its diagnostics, and its placement when it accepted. Shared by every
// node of a class (one topology object, one heldKey): the check is a function of those and the
// contract alone, so 1,000 nodes of a dozen machine types cost a dozen checks, not a thousand.
struct Verdict {
  std::vector<Diagnostic> diags;
  std::optional<NodePlacement> placed;
  // A device of the placement under a PCIe domain reserved on the node: the node's refusal, before
  // anything its check said (the check may have accepted, or refused for the reservation's held
  // devices in words that do not say why they are held).
  std::optional<ReservedUse> reserved;
  Location reservedAt; // the field of the contract that asks for the device
};

// A node the full check refused, with what it reported (its last try's, for a compute-heavy job
// the try with the contract as written).
struct Refusal {
  const NodeState *node;
  const Verdict *verdict;
  unsigned errors() const {
    return static_cast<unsigned>(
               llvm::count_if(verdict->diags, [](const Diagnostic &d) { return d.severity == Severity::Error; })) +
           (verdict->reserved ? 1 : 0);
  }
  const Diagnostic *firstError() const {
    for (const Diagnostic &d : verdict->diags)
      if (d.severity == Severity::Error)
        return &d;
    return nullptr;
  }
};

std::string firstErrorText(const Refusal &r) {
  if (r.verdict->reserved)
    return r.verdict->reserved->why;
  const Diagnostic *d = r.firstError();
  return d ? d->message : std::string("refused");
}

Location firstErrorAt(const Refusal &r) {
  if (r.verdict->reserved)
    return r.verdict->reservedAt;
  const Diagnostic *d = r.firstError();
  return d ? d->loc : Location::none();
}

// Where `contract` asks for the device a reserved use is about (a copy of a `gpus = N` role is
// checked under its own name and asks where the role does).
Location requestOf(const ir::Contract &contract, const ReservedUse &use) {
  for (const ir::Role &role : contract.body.roles) {
    if (!llvm::is_contained(passes::checkedRoleNames(role), use.role))
      continue;
    const ir::RoleFields &f = role.fields;
    const ir::Origin *origin = use.device == ReservedUse::Device::Gpu && f.gpu         ? &f.gpu->origin
                               : use.device == ReservedUse::Device::Rdma && f.rdma_port ? &f.rdma_port->origin
                               : use.device == ReservedUse::Device::Block && f.io_queue ? &f.io_queue->origin
                                                                                        : nullptr;
    if (origin)
      return Location{origin->range, {}, 0};
  }
  return Location::none();
}

std::string nameList(const std::vector<const NodeState *> &nodes) {
  std::vector<llvm::StringRef> names;
  for (size_t i = 0; i < nodes.size() && i < kNamedNodes; ++i)
    names.push_back(nodes[i]->name);
  std::string text = llvm::join(names, ", ");
  if (nodes.size() > kNamedNodes)
    text += " and " + std::to_string(nodes.size() - kNamedNodes) + " more";
  return text;
}

// What a refusal says the job needs: "4" (nodes), or for an elastic job "at least 2 of 2..4".
std::string needText(const JobShape &shape, unsigned fewest) {
  if (!shape.sizes.elastic())
    return std::to_string(shape.nodes);
  return "at least " + std::to_string(fewest) + " of " + std::to_string(shape.sizes.min) + ".." +
         std::to_string(shape.sizes.max);
}

using TurnedAway = std::map<std::string, std::vector<const NodeState *>>; // by the prefilter's reason

// The prefilter: counts only, so that the full check runs on a handful of nodes, not all of them.
// The caller's rank first (Placer::Steering), then best fit (it keeps whole nodes free for the jobs
// that need them), the registry's name order breaking ties; the nodes turned away go to `turnedAway`.
std::vector<Candidate> candidatesFor(const JobShape &shape, const NodeRegistry &registry, TurnedAway &turnedAway,
                                     PlacementResult &result, const Placer::Steering &steering) {
  std::vector<Candidate> candidates;
  for (const NodeState *node : registry.nodes()) {
    // A node out of placement (cordoned, failed), or one the caller turns away, is never a
    // candidate, whatever it has free.
    std::string why = !node->notPlaceable.empty() ? "no new placement (" + node->notPlaceable + ")"
                      : steering.veto                ? steering.veto(*node)
                                                     : std::string();
    if (why.empty())
      why = prefilter(shape, node->capacity);
    if (!why.empty()) {
      turnedAway[why].push_back(node);
      ++result.prefiltered;
      continue;
    }
    candidates.push_back({node, node->capacity.freeGpus - shape.anyGpus, node->capacity.freeCores - shape.localCores});
  }
  auto rank = [&](const Candidate &c) {
    auto it = steering.rank.find(c.node->name);
    return it == steering.rank.end() ? UINT_MAX : it->second;
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate &a, const Candidate &b) {
    return std::make_tuple(rank(a), a.spareGpus, a.spareCores) < std::make_tuple(rank(b), b.spareGpus, b.spareCores);
  });
  return candidates;
}

// The full checks of one placement: each node's, and its plan when it accepts, once per class of
// like nodes and variant of the contract; the nodes taken and the nodes that refused.
class Search {
public:
  Search(passes::PassManager &pipeline, const std::string &version, DiagnosticEngine &diags,
         PlacementResult &result)
      : pipeline_(pipeline), version_(version), diags_(diags), result_(result) {}

  const Verdict &check(const ir::Contract &variant, const NodeState &node) {
    auto [it, fresh] = verdicts_.try_emplace(ClassKey{&variant, node.topology.get(), node.heldKey});
    Verdict &v = it->second;
    if (!fresh)
      return v;
    CollectingConsumer sink;
    DiagnosticEngine scratch(diags_.sourceMgr(), sink);
    ++result_.checked;
    passes::CheckedContract checked = pipeline_.check(variant, node.topology.get(), node.held, scratch);
    v.diags = std::move(sink.diags);
    if (std::optional<ReservedUse> use = reservedUse(checked.placement, *node.topology, node.reservation)) {
      v.reservedAt = requestOf(variant, *use);
      v.reserved = std::move(use);
      return v;
    }
    if (!checked.accepted)
      return v;
    NodePlacement &p = v.placed.emplace();
    p.plan = passes::lowerToPlan(variant, checked.placement, checked.decisions, *node.topology, version_);
    for (const passes::RolePlacement &r : checked.placement.roles)
      p.roles.push_back({r.role, r.gpuBound, r.rdmaBound, r.cpusBound});
    return v;
  }

  // Checks `node` with `variant`: taken when it accepts, else one more refusal.
  void tryNode(const ir::Contract &variant, const NodeState &node, bool crossedDomains, std::vector<Refusal> &refused) {
    const Verdict &v = check(variant, node);
    if (!v.placed) {
      refused.push_back({&node, &v});
      return;
    }
    chosen.push_back(*v.placed);
    chosen.back().node = &node;
    chosen.back().crossedDomains = crossedDomains;
    chosenDiags.push_back(&v.diags);
  }

  std::vector<NodePlacement> chosen;
  std::vector<const std::vector<Diagnostic> *> chosenDiags;

private:
  using ClassKey = std::tuple<const ir::Contract *, const hal::Topology *, llvm::StringRef>;
  passes::PassManager &pipeline_;
  const std::string &version_;
  DiagnosticEngine &diags_;
  PlacementResult &result_;
  std::map<ClassKey, Verdict> verdicts_; // std::map: Refusals point into it
};

// ERR_PLACE_001: fewer than `wanted` nodes could take the job. Names the node that came closest
// (the checked node with the fewest errors, the first among equals; a node the prefilter turned
// away is farther than any checked one), then each other refusal and each reason of the prefilter.
void reportTooFewNodes(const ir::Contract &contract, const JobShape &shape, unsigned fewest, size_t placed,
                       size_t registered,
                       const std::vector<Refusal> &refused, const TurnedAway &turnedAway, DiagnosticEngine &diags) {
  const Refusal *closest = nullptr;
  for (const Refusal &r : refused)
    if (!closest || r.errors() < closest->errors())
      closest = &r;
  std::string closestName, closestWhy;
  Location firstAt = Location::none();
  if (closest) {
    closestName = closest->node->name;
    closestWhy = firstErrorText(*closest);
    firstAt = firstErrorAt(*closest);
  } else {
    // Every node was turned away: the one with the most free GPUs, then cores, came closest.
    const NodeState *best = nullptr;
    std::string bestWhy;
    for (const auto &[why, nodes] : turnedAway)
      for (const NodeState *n : nodes)
        if (!best || std::make_tuple(n->capacity.freeGpus, n->capacity.freeCores, llvm::StringRef(best->name)) >
                         std::make_tuple(best->capacity.freeGpus, best->capacity.freeCores, llvm::StringRef(n->name)))
          best = n, bestWhy = why;
    closestName = best ? best->name : std::string("none");
    closestWhy = bestWhy;
  }
  DiagBuilder d = diags.report(DiagCode::ERR_PLACE_001, contract.nameRange);
  d << contract.name << needText(shape, fewest) << static_cast<uint64_t>(placed) << static_cast<uint64_t>(registered)
    << closestName
    << closestWhy;
  if (firstAt.hasRange())
    d.note(firstAt, "node '" + closestName + "' fails here");
  if (shape.ioHeavy)
    d.note(Location::none(), "IO-heavy job (" + shape.ioReason + "): every role's GPU, HCA and NVMe must share a "
                                                                  "root complex; no fallback across PCIe domains");
  size_t named = 0;
  for (const Refusal &r : refused) {
    if (&r == closest)
      continue;
    if (named++ == kNamedNodes) {
      d.note(Location::none(), std::to_string(refused.size() - 1 - kNamedNodes) + " more nodes failed their check");
      break;
    }
    d.note(Location::none(), "node '" + r.node->name + "': " + firstErrorText(r));
  }
  for (const auto &[why, nodes] : turnedAway)
    d.note(Location::none(), std::to_string(nodes.size()) + (nodes.size() == 1 ? " node" : " nodes") + " with " + why +
                                 ": " + nameList(nodes));
}

} // namespace

Placer::Placer(const NodeRegistry &registry, std::string compilerVersion)
    : registry_(registry), version_(std::move(compilerVersion)), pipeline_(passes::PassManager::defaultPipeline()) {}

PlacementResult Placer::place(const ir::Contract &contract, DiagnosticEngine &diags) {
  PlacementResult result;
  result.shape = shapeOf(contract);
  const JobShape &shape = result.shape;
  // An elastic job (`nodes = MIN..MAX`) takes the largest allowed size it can place whole; the
  // frontend refused one that allows none, so the fewest is the last allowed.
  const std::vector<unsigned> sizes = ir::allowedSizes(shape.sizes);
  const unsigned wanted = shape.nodes;
  const unsigned fewest = sizes.empty() ? wanted : sizes.back();
  if (fewest > registry_.size()) {
    DiagBuilder d = diags.report(DiagCode::ERR_PLACE_002, contract.nameRange);
    d << contract.name << needText(shape, fewest) << static_cast<uint64_t>(registry_.size());
    if (contract.body.compute.nodes)
      d.note(Location{contract.body.compute.nodes->origin.range, {}, 0},
             "nodes = " + ir::formatValue(contract.body.compute.nodes->value) + " set here");
    return result;
  }

  TurnedAway turnedAway;
  std::vector<Candidate> candidates = candidatesFor(shape, registry_, turnedAway, result, steering_);
  Search search(pipeline_, version_, diags, result);
  std::vector<Refusal> refused;
  // Every role in one PCIe domain first; then, for a compute-heavy job, the nodes that could not keep
  // them there, in the same order, with the contract's own policy.
  const ir::Contract strict = strictVariant(contract);
  for (const Candidate &c : candidates)
    if (search.chosen.size() < wanted)
      search.tryNode(strict, *c.node, false, refused);
  if (search.chosen.size() < wanted && !shape.ioHeavy) {
    std::vector<Refusal> still;
    for (const Refusal &r : refused) {
      if (search.chosen.size() == wanted)
        still.push_back(r);
      else
        search.tryNode(contract, *r.node, true, still);
    }
    refused = std::move(still);
  }
  // The largest allowed size the nodes taken reach; the nodes past it are the least preferred.
  auto size = std::find_if(sizes.begin(), sizes.end(), [&](unsigned n) { return n <= search.chosen.size(); });
  if (search.chosen.size() < fewest || size == sizes.end()) {
    reportTooFewNodes(contract, shape, fewest, search.chosen.size(), registry_.size(), refused, turnedAway, diags);
    return result;
  }
  search.chosen.resize(*size);
  search.chosenDiags.resize(*size);

  // The chosen nodes' warnings, each once: the same contract warns the same way on like nodes.
  std::set<std::pair<DiagCode, std::string>> seen;
  for (const std::vector<Diagnostic> *reported : search.chosenDiags)
    for (const Diagnostic &w : *reported)
      if (w.severity != Severity::Error && seen.insert({w.code, w.message}).second)
        diags.emit(w);
  result.nodes = std::move(search.chosen);
  return result;
}

} // namespace msc::cluster
