#include "cluster/controller/Decide.h"

#include "cluster/controller/ApplyConfig.h"
#include "cluster/controller/Borrowers.h"
#include "cluster/controller/Drain.h"
#include "cluster/controller/Grow.h"
#include "cluster/controller/NodeFaults.h"
#include "cluster/controller/Rendezvous.h"
#include "cluster/placement/Placer.h"
#include "plan/PlanFile.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <set>

namespace msc::cluster {
namespace {

// The cluster config as published now: it decides the placements of this round. One that does not
// read (written around the leader) places nothing: which domains it reserves is unknown, and a job
// on the management NIC's domain is worse than a job that waits.
struct ConfigInForce {
  bool published = false;
  std::optional<ClusterConfig> config;
  std::string error; // printed, when published and unreadable
};

ConfigInForce readConfig(const ClusterState &state) {
  ConfigInForce out;
  if (!state.config)
    return out;
  out.published = true;
  std::string why;
  std::optional<PublishedConfig> published = decodeConfig(*state.config, why);
  ConfigSource source(kConfigKey, published ? published->yaml : std::string());
  if (published)
    out.config = parseClusterConfig(source);
  else
    source.error(etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_010, {why}));
  out.error = source.printed();
  return out;
}

// The submission of contract `name` decoded and compiled, from memory while its bytes are the same.
const ReconcileMemory::CompiledSubmission &compiled(const std::string &name, const std::string &value,
                                                    const ReconcileOptions &options, ReconcileMemory &memory) {
  ReconcileMemory::CompiledSubmission &entry = memory.compiled[name];
  if (entry.sources && entry.value == value)
    return entry;
  entry = {};
  entry.value = value;
  CapturedDiagnostics load;
  entry.sources = load.sm;
  std::string why;
  entry.submission = decodeSubmission(value, why);
  if (entry.submission && entry.submission->contract != name)
    why = "it names contract '" + entry.submission->contract + "'", entry.submission.reset();
  if (!entry.submission)
    load.os << etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_006, {name, why}).str() << "\n";
  else
    entry.loaded = loadSubmittedContract(name, entry.submission->source, {options.stdlibDir}, load,
                                         entry.submission->contractClass);
  load.done();
  entry.diagnostics = load.text;
  return entry;
}

// "node n2 lost: " (or "nodes n2, n3 lost: "): the nodes of a placement that are registered no
// more, as an event's cause; empty when none is.
std::string lostText(const std::vector<AssignedPlan> &previous, const NodeRegistry &registry) {
  std::vector<std::string> gone;
  for (const AssignedPlan &a : previous)
    if (!registry.find(a.node))
      gone.push_back(a.node);
  if (gone.empty())
    return {};
  return (gone.size() == 1 ? "node " : "nodes ") + llvm::join(gone, ", ") + " lost: ";
}

// "health failed: ERR_HEALTH_001 thermal sensor ... (and 1 more)": a verdict in one line, as a
// cordon's reason and a refusal's note say it.
std::string healthText(const NodeHealth &health) {
  std::string text = std::string("health ") + healthLevelName(health.level);
  if (!health.reasons.empty())
    text += ": " + health.reasons.front().code + " " + health.reasons.front().message;
  if (health.reasons.size() > 1)
    text += " (and " + std::to_string(health.reasons.size() - 1) + " more)";
  return text;
}

// The faults this round adds to each node's history (NodeFaults.h), before they are written.
using FreshFaults = std::map<std::string, std::vector<NodeFault>>;

// A node's history as it will be once this round's faults are added.
std::vector<NodeFault> historyWith(const std::string &node, const ClusterState &state, const FreshFaults &fresh) {
  std::vector<NodeFault> all;
  if (auto h = state.faults.find(node); h != state.faults.end())
    all = h->second.faults;
  if (auto f = fresh.find(node); f != fresh.end())
    all.insert(all.end(), f->second.begin(), f->second.end());
  return all;
}

// Why `node` takes no new placement, empty when it may: its cordon first (the operator's words, or
// the policy's), then a failed verdict, then a verdict that does not read. A cordon the cluster
// config's cordon_on or lemon rule asks for is added to `out` and stands from this round on.
std::string notPlaceable(const std::string &node, const ClusterState &state, const ConfigInForce &config,
                         const FreshFaults &fresh, const Clock &clock, int64_t leaderRevision, Decision &out) {
  if (auto cordon = state.cordons.find(node); cordon != state.cordons.end())
    return "cordoned by " + cordon->second.by + ": " + cordon->second.reason;
  if (config.config && config.config->lemon && !state.unreadableFaults.count(node))
    if (std::optional<std::string> lemon =
            lemonReason(historyWith(node, state, fresh), *config.config->lemon, clock.unixMs())) {
      Cordon c{"policy", *lemon, leaderRevision, clock.unixMs()};
      out.cordons.push_back({node, etcd::TxnOp::put(cordonKey(node), encodeCordon(c))});
      out.report.cordoned.push_back(node + ": " + c.reason);
      return "cordoned by policy: " + c.reason;
    }
  auto health = state.health.find(node);
  // A verdict the config drains for cordons the node too, as `mscale-cli cluster drain` does.
  if (health != state.health.end() && health->second.level != HealthLevel::Healthy && config.config &&
      (llvm::is_contained(config.config->cordonOn, healthLevelName(health->second.level)) ||
       llvm::is_contained(config.config->drainOn, healthLevelName(health->second.level)))) {
    Cordon c{"policy", healthText(health->second), leaderRevision, clock.unixMs()};
    out.cordons.push_back({node, etcd::TxnOp::put(cordonKey(node), encodeCordon(c))});
    out.report.cordoned.push_back(node + ": " + c.reason);
    return "cordoned by policy: " + c.reason;
  }
  if (health != state.health.end() && health->second.level == HealthLevel::Failed)
    return healthText(health->second);
  if (state.unreadableHealth.count(node))
    return "its health record does not read (ERR_CLUSTER_016)";
  return {};
}

} // namespace

Decision decide(const ClusterState &state, ReconcileMemory &memory, const Clock &clock, const ReconcileOptions &options,
                int64_t leaderRevision) {
  const uint64_t nowNs = clock.monotonicNs();
  Decision out;
  ReconcileReport &report = out.report;
  report.revision = state.revision;
  report.unreadableNodes = state.unreadableNodes;
  report.unreadableHealth = state.unreadableHealthNew;
  report.unreadableFaults = state.unreadableFaultsNew;
  report.unreadableLending = state.unreadableLendingNew;
  FreshFaults fresh;
  for (const auto &[node, statuses] : state.statuses)
    if (!state.unreadableFaults.count(node))
      if (std::vector<NodeFault> f = workerFaults(node, state, clock.unixMs()); !f.empty())
        fresh[node] = std::move(f);

  CapturedDiagnostics setup;
  NodeRegistry registry;
  for (const auto &[node, topology] : state.nodes)
    if (topology)
      registry.add(node, topology, setup.diags);
  ConfigInForce config = readConfig(state);
  if (config.config)
    reserveDomains(*config.config, registry, setup.diags);
  // Registered still (what runs there stays, and is not lost), but no new placement.
  for (const auto &[node, topology] : state.nodes)
    if (topology)
      if (std::string why = notPlaceable(node, state, config, fresh, clock, leaderRevision, out); !why.empty())
        registry.exclude(node, why, setup.diags);

  // What stays, what waits, what is placed.
  std::set<std::string> toPlace, lost;
  uint64_t graceNs = uint64_t(std::chrono::nanoseconds(options.lostNodeGrace).count());
  for (const auto &[name, value] : state.contracts) {
    auto it = state.assigned.find(name);
    if (it == state.assigned.end()) {
      toPlace.insert(name);
      continue;
    }
    bool whole = std::all_of(it->second.begin(), it->second.end(),
                             [&](const AssignedPlan &a) { return registry.find(a.node) != nullptr; });
    if (whole)
      continue;
    lost.insert(name);
    uint64_t since = memory.lostSinceNs.try_emplace(name, nowNs).first->second;
    if (nowNs - since >= graceNs)
      toPlace.insert(name);
    else
      report.waiting.push_back(name);
  }
  std::erase_if(memory.lostSinceNs,
                [&](const auto &entry) { return !lost.count(entry.first) || toPlace.count(entry.first); });
  std::erase_if(memory.compiled, [&](const auto &entry) { return !state.contracts.count(entry.first); });
  if (config.config && options.policyDrains)
    decidePolicyDrains(state, *config.config, memory, clock, options, leaderRevision, out);
  // A drained node's jobs move once they stopped at a snapshot boundary (Drain.h).
  // Borrowers are not drained: they leave a draining node at once, as they leave one that lends no
  // more what they ask (Borrowers.h).
  std::set<std::string> staying, borrowing;
  for (const auto &[name, list] : state.assigned)
    if (state.contracts.count(name) && !toPlace.count(name))
      (list.front().borrower() ? borrowing : staying).insert(name);
  const std::map<std::string, std::string> drained = decideDrains(state, staying, clock, options, leaderRevision, out);
  for (const auto &[name, cause] : drained)
    toPlace.insert(name), staying.erase(name);
  // A grow moves what no drain does. Started at the end of the round, once it is known what the
  // round places and refuses.
  std::map<std::string, std::string> grown = decideGrowths(state, staying, memory, clock, options, leaderRevision, out);
  for (const auto &[name, cause] : grown)
    toPlace.insert(name), staying.erase(name);
  std::map<std::string, std::string> planned = drained;
  planned.insert(grown.begin(), grown.end());
  LentCapacity lent(state);
  const std::map<std::string, std::string> reclaimed = borrowersToMove(state, borrowing, lent);
  for (const auto &[name, cause] : reclaimed)
    toPlace.insert(name);
  // A contract that stays, or waits out the grace, holds its live nodes' resources.
  for (const auto &[name, list] : state.assigned) {
    if (toPlace.count(name) || !state.contracts.count(name))
      continue;
    for (const AssignedPlan &a : list)
      if (a.decoded && !a.borrower()) // a borrower holds nothing: a guaranteed job never waits for one
        registry.admit(a.node, *a.decoded, "an assignment", setup.diags);
  }

  const std::string rev = std::to_string(leaderRevision);
  // A withdrawn contract leaves nothing: its assignments, and the status and events of one that
  // was placed or refused.
  std::set<std::string> left;
  for (const auto &[name, list] : state.assigned)
    left.insert(name);
  left.insert(state.decided.begin(), state.decided.end());
  for (const auto &[name, events] : state.events)
    left.insert(name);
  static const std::vector<AssignedPlan> kNoAssignments;
  for (const std::string &name : left) {
    if (state.contracts.count(name))
      continue;
    ContractAction withdraw{ContractAction::Kind::Withdraw, name, {}};
    auto assigned = state.assigned.find(name);
    for (const AssignedPlan &a : assigned == state.assigned.end() ? kNoAssignments : assigned->second)
      withdraw.ops.push_back(etcd::TxnOp::remove(a.key));
    withdraw.ops.push_back(etcd::TxnOp::remove(std::string(kContractStatusPrefix) + name));
    if (state.events.count(name))
      withdraw.ops.push_back(etcd::TxnOp::remove(std::string(kContractEventsPrefix) + name));
    out.actions.push_back(std::move(withdraw));
    report.withdrawn.push_back(name);
  }

  static const std::vector<AssignedPlan> kNone;
  for (const std::string &name : toPlace) {
    auto had = state.assigned.find(name);
    const std::vector<AssignedPlan> &previous = had == state.assigned.end() ? kNone : had->second;
    bool replacing = had != state.assigned.end();
    auto causeOf = [&](const std::string &contract) {
      if (auto moved = planned.find(contract); moved != planned.end())
        return moved->second;
      if (auto taken = reclaimed.find(contract); taken != reclaimed.end())
        return taken->second;
      return lostText(previous, registry);
    };
    for (const AssignedPlan &a : previous)
      if (!registry.find(a.node) && !state.unreadableFaults.count(a.node))
        if (std::optional<NodeFault> f = lostFault(name, a, state, clock.unixMs()))
          fresh[a.node].push_back(std::move(*f));
    const ReconcileMemory::CompiledSubmission &submitted = compiled(name, state.contracts.at(name), options, memory);
    CapturedDiagnostics decision(submitted.sources);
    decision.os << submitted.diagnostics;
    PlacementResult placed;
    std::string defaults; // what the config filled in, for the status and the log
    const std::optional<BorrowerAsk> ask =
        submitted.loaded ? borrowerAsk(submitted.loaded->contract()) : std::optional<BorrowerAsk>();
    if (submitted.loaded && config.published && !config.config) {
      decision.os << config.error;
    } else if (ask) {
      placed = placeBorrower(submitted.loaded->contract(), *ask, state, registry, lent, options.compilerVersion,
                             decision.diags);
    } else if (submitted.loaded) {
      ir::Contract contract = submitted.loaded->contract();
      if (config.config)
        if (std::vector<std::string> filled = applyScalingDefaults(*config.config, contract); !filled.empty())
          defaults = "defaults from " + config.config->describe() + ": " + llvm::join(filled, ", ");
      Placer placer(registry, options.compilerVersion);
      placed = placer.place(contract, decision.diags);
    }
    decision.done();
    ContractAction action{placed.placed() ? ContractAction::Kind::Place : ContractAction::Kind::Refuse, name, {}};
    std::vector<etcd::TxnOp> &ops = action.ops;
    std::string status, event;
    if (placed.placed()) {
      std::string nodes;
      // Rank 0 runs on the first node chosen; each rank learns where it listens (Rendezvous.h).
      const std::string &first = placed.nodes.front().node->name;
      auto address = state.addresses.find(first);
      std::string masterAddress = address == state.addresses.end() ? first : address->second;
      uint16_t masterPort = rendezvousPort(name, previous);
      for (unsigned rank = 0; rank < placed.nodes.size(); ++rank) {
        const NodePlacement &p = placed.nodes[rank];
        Assignment a;
        a.leaderRevision = leaderRevision;
        a.plan = plan::encodePlan(p.plan);
        a.command = submitted.submission->command;
        a.environment = submitted.submission->environment;
        for (auto &[key, value] : rendezvousEnvironment(rank, unsigned(placed.nodes.size()), masterAddress, masterPort))
          a.environment[key] = std::move(value); // the placement's, whatever the submission said
        for (auto &[key, value] : batchEnvironment(placed.shape.sizes, unsigned(placed.nodes.size())))
          a.environment[key] = std::move(value);
        ops.push_back(etcd::TxnOp::put(assignmentKey(p.node->name, name), encodeAssignment(a)));
        nodes += (nodes.empty() ? "" : ",") + p.node->name;
      }
      // An elastic job says the size it got, which may be less than its most.
      const ir::WorldSizes &sizes = placed.shape.sizes;
      const std::string size = sizes.elastic() ? " (world size " + std::to_string(placed.nodes.size()) + " of " +
                                                     std::to_string(sizes.min) + ".." + std::to_string(sizes.max) + ")"
                                               : std::string();
      status = "placed " + nodes + " leader-rev " + rev + "\n" + (defaults.empty() ? "" : defaults + "\n") +
               (size.empty() ? "" : "world size " + std::to_string(placed.nodes.size()) + "\n");
      event = (replacing ? causeOf(name) + "placed again on " + nodes : "placed on " + nodes) + size;
      // The old set goes, live nodes included (placed whole); a node chosen again gets its new
      // assignment by the put above (etcd refuses a key twice in one transaction).
      for (const AssignedPlan &a : previous)
        if (std::none_of(ops.begin(), ops.end(), [&](const etcd::TxnOp &op) { return op.key == a.key; }))
          ops.push_back(etcd::TxnOp::remove(a.key));
      // A job a drain or a grow moves is placed as planned, not after a loss: "placed train -> n2,n3
      // (drain of n1: stopped after step 60)".
      std::string why = defaults;
      if (planned.count(name) || reclaimed.count(name))
        why = llvm::StringRef(causeOf(name)).rtrim(": ").str() + (defaults.empty() ? "" : "; " + defaults);
      (replacing && !planned.count(name) && !reclaimed.count(name) ? report.replaced : report.placed)
          .push_back(name + " -> " + nodes + (why.empty() ? "" : " (" + why + ")"));
    } else {
      status = "refused leader-rev " + rev + "\n" + (defaults.empty() ? "" : defaults + "\n") + decision.text;
      // A borrower waits for a node that lends (its worker elsewhere stopped, its snapshots kept).
      event = (replacing ? causeOf(name) : std::string()) +
              (ask ? "waits for a node that lends what it asks: " : "refused: ") + decision.firstLine() +
              (replacing && !ask ? " (its workers on the nodes left stop)" : "");
      // A job that cannot be placed whole again does not run in part: its workers on the nodes that
      // are left stop too (their snapshots stay on the shared disk). It is placed again, and resumes,
      // once the cluster can take it whole.
      for (const AssignedPlan &a : previous)
        ops.push_back(etcd::TxnOp::remove(a.key));
      if (replacing && !ask)
        report.released.push_back(name);
      report.refused.push_back(name + ": " + decision.firstLine());
    }
    ops.push_back(etcd::TxnOp::put(std::string(kContractStatusPrefix) + name, status));
    // An event once: the same refusal round after round adds nothing.
    auto stored = state.events.find(name);
    std::vector<ContractEvent> events = stored == state.events.end() ? std::vector<ContractEvent>{} : decodeEvents(stored->second);
    if (events.empty() || events.back().text != event) {
      events.push_back({clock.unixMs(), event});
      ops.push_back(etcd::TxnOp::put(std::string(kContractEventsPrefix) + name, encodeEvents(events)));
    }
    out.actions.push_back(std::move(action));
  }

  for (auto &[node, faults] : fresh) {
    auto read = state.faults.find(node);
    for (const NodeFault &f : faults)
      report.faults.push_back(node + ": " + f.text + " (" + f.id + ")");
    out.faults.push_back({node, read == state.faults.end() ? 0 : read->second.modRevision,
                          etcd::TxnOp::put(nodeFaultsKey(node), encodeFaults(historyWith(node, state, fresh)))});
  }
  if (options.growElastic)
    startGrowths(state, staying, memory, clock, options, leaderRevision, out);
  return out;
}

} // namespace msc::cluster
