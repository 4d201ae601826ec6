#include "cluster/controller/Grow.h"

#include "cluster/controller/PlannedStops.h"
#include "cluster/controller/Rendezvous.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <functional>

namespace msc::cluster {
namespace {

// A placement of a job, told from the next one: its nodes and its rendezvous port (fresh at every
// placement, Rendezvous.h).
std::string placementId(const std::vector<AssignedPlan> &list) {
  std::string id;
  for (const AssignedPlan &a : list)
    id += a.node + ",";
  auto port = list.front().assignment.environment.find("MASTER_PORT");
  return id + "@" + (port == list.front().assignment.environment.end() ? std::string() : port->second);
}

// The grow stop a job's assignments carry (none: not growing).
std::optional<PlannedStop> growStop(const std::vector<AssignedPlan> &list) {
  for (const AssignedPlan &a : list)
    if (a.assignment.stop && a.assignment.stop->cause == PlannedStop::Cause::Grow)
      return a.assignment.stop;
  return std::nullopt;
}

// Whether the plan the job runs says it may run on more nodes than it has (its provenance: the
// contract's range as the leader compiled it). A hint that saves the look below for the fixed-size
// jobs: the look decides.
bool belowItsMost(const std::vector<AssignedPlan> &list) {
  const AssignedPlan &a = list.front();
  if (!a.decoded || a.borrower())
    return false;
  const plan::Provenance &p = a.decoded->provenance();
  return p.min_nodes() && p.min_nodes() < p.nodes() && list.size() < p.nodes();
}

// The nodes the leader's placement gives `contract` in `look`, a decision made without its
// assignments (0: refused).
size_t nodesPlaced(const Decision &look, const std::string &contract) {
  for (const ContractAction &a : look.actions)
    if (a.contract == contract && a.kind == ContractAction::Kind::Place)
      return size_t(std::count_if(a.ops.begin(), a.ops.end(), [](const etcd::TxnOp &op) {
        return op.kind == etcd::TxnOp::Kind::Put && llvm::StringRef(op.key).starts_with(kAssignmentsPrefix);
      }));
  return 0;
}

// What decides whether a job can grow, in one string: the nodes registered and whether each takes
// placements, and where every contract runs. The leader's look is not repeated while it is the same
// as when the look found no room (a round on every agent's status write would redo it each time).
std::string capacityFingerprint(const ClusterState &state) {
  std::string out;
  for (const auto &[node, topology] : state.nodes) {
    out += node + (topology ? "" : "?") + (state.cordons.count(node) ? "!" : "");
    if (auto h = state.health.find(node); h != state.health.end())
      out += std::to_string(int(h->second.level));
    out += state.unreadableHealth.count(node) ? "?;" : ";";
  }
  for (const auto &[contract, list] : state.assigned) {
    out += "|" + contract + ":";
    for (const AssignedPlan &a : list)
      out += a.node + ",";
  }
  for (const auto &[contract, value] : state.contracts)
    out += "|" + contract + "=" + std::to_string(std::hash<std::string>{}(value)); // submitted, changed
  out += "|config=" + std::to_string(std::hash<std::string>{}(state.config.value_or(""))); // reserved domains
  return out;
}

// The contract names of "contract: why" lines.
std::set<std::string> contractsOf(const std::vector<std::string> &lines) {
  std::set<std::string> names;
  for (const std::string &line : lines)
    names.insert(llvm::StringRef(line).split(": ").first.str());
  return names;
}

} // namespace

std::map<std::string, std::string> decideGrowths(const ClusterState &state, const std::set<std::string> &staying,
                                                 ReconcileMemory &memory, const Clock &clock,
                                                 const ReconcileOptions &options, int64_t leaderRevision, Decision &out) {
  std::map<std::string, std::string> moves;
  const uint64_t nowNs = clock.monotonicNs();
  std::set<std::string> growing;
  for (const auto &[contract, list] : state.assigned) {
    std::optional<PlannedStop> stop = growStop(list);
    if (!stop || !staying.count(contract))
      continue;
    if (std::any_of(out.actions.begin(), out.actions.end(), [&](const ContractAction &a) { return a.contract == contract; }))
      continue; // a drain of one of its nodes asked its own stop over this one
    // A job whose worker ended by itself has nothing to grow.
    bool ended = std::any_of(list.begin(), list.end(),
                             [&](const AssignedPlan &a) { return endedByItself(state, a, contract); });
    const uint64_t since = memory.growSinceNs.try_emplace(contract, nowNs).first->second;
    const uint64_t timeoutNs = uint64_t(std::chrono::nanoseconds(options.growTimeout).count());
    const StopProgress progress = readStop(state, contract, list, stop->id);
    const std::string cause = "grow from " + std::to_string(list.size()) + " nodes: ";
    if (!ended && progress.noWorker) {
      moves[contract] = cause; // it holds resources only: nothing to stop
      continue;
    }
    if (!ended && progress.stopped()) {
      moves[contract] = cause + "stopped after step " + std::to_string(progress.afterStep) + ": ";
      continue;
    }
    if (ended || nowNs - since >= timeoutNs) {
      ContractAction withdraw = stopAction(contract, list, std::nullopt, leaderRevision);
      if (!ended) {
        memory.growGivenUp[contract] = placementId(list);
        addEvent(state, contract,
                 cause + "not stopped at a snapshot boundary within " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(options.growTimeout).count()) +
                     " s; it runs on at its size",
                 clock, withdraw);
      }
      out.actions.push_back(std::move(withdraw));
      continue;
    }
    growing.insert(contract);
    out.report.stopping = true; // the timeout passes whether or not anything changes
    advanceStop(state, contract, list, progress, PlannedStop::Cause::Grow, stop->id, cause, clock, options,
                leaderRevision, out);
  }
  std::erase_if(memory.growSinceNs, [&](const auto &entry) { return !growing.count(entry.first); });
  std::erase_if(memory.growNoRoom, [&](const auto &entry) { return !state.assigned.count(entry.first); });
  std::erase_if(memory.growGivenUp, [&](const auto &entry) {
    auto assigned = state.assigned.find(entry.first);
    return assigned == state.assigned.end() || placementId(assigned->second) != entry.second;
  });
  return moves;
}

void startGrowths(const ClusterState &state, const std::set<std::string> &staying, ReconcileMemory &memory,
                  const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision, Decision &out) {
  const ReconcileReport &round = out.report;
  if (!round.placed.empty() || !round.replaced.empty() || !round.waiting.empty() || !round.released.empty())
    return; // capacity is changing hands this round: look again at the next
  const std::set<std::string> refused = contractsOf(round.refused);
  std::string fingerprint;
  for (const std::string &contract : staying) {
    const std::vector<AssignedPlan> &list = state.assigned.at(contract);
    if (!belowItsMost(list) || stopAsked(list, PlannedStop::Cause::Drain) || growStop(list))
      continue;
    if (auto given = memory.growGivenUp.find(contract); given != memory.growGivenUp.end() && given->second == placementId(list))
      continue;
    if (std::any_of(out.actions.begin(), out.actions.end(), [&](const ContractAction &a) { return a.contract == contract; }))
      continue; // moved by something else this round
    if (std::any_of(list.begin(), list.end(), [&](const AssignedPlan &a) { return endedByItself(state, a, contract); }))
      continue;
    if (fingerprint.empty())
      fingerprint = capacityFingerprint(state);
    if (auto looked = memory.growNoRoom.find(contract); looked != memory.growNoRoom.end() && looked->second == fingerprint)
      continue; // nothing that decides it changed since the look found no room
    memory.growNoRoom.erase(contract);
    // The leader's own placement of the job with its nodes' resources counted free.
    ClusterState without = state;
    without.assigned.erase(contract);
    ReconcileOptions look = options;
    look.policyDrains = false;
    look.growElastic = false; // a look, not a round: it starts nothing itself
    ReconcileMemory lookMemory = memory;
    Decision d = decide(without, lookMemory, clock, look, leaderRevision);
    const size_t nodes = nodesPlaced(d, contract);
    std::set<std::string> wouldRefuse = contractsOf(d.report.refused);
    if (nodes <= list.size() || !std::includes(refused.begin(), refused.end(), wouldRefuse.begin(), wouldRefuse.end())) {
      memory.growNoRoom[contract] = fingerprint; // no room, or only what a waiting job can run on
      continue;
    }
    const int64_t id = state.revision;
    ContractAction ask = stopAction(contract, list, PlannedStop{id, 1, 0, PlannedStop::Cause::Grow}, leaderRevision);
    addEvent(state, contract,
             "grow from " + std::to_string(list.size()) + " to " + std::to_string(nodes) +
                 " nodes: asked to stop at a snapshot boundary",
             clock, ask);
    out.actions.push_back(std::move(ask));
    out.report.stopping = true;
    memory.growSinceNs[contract] = clock.monotonicNs();
  }
}

} // namespace msc::cluster
