#include "cluster/controller/Drain.h"

#include "cluster/controller/PlannedStops.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>

namespace msc::cluster {
namespace {

// Whether every rank of the job stopped after the step its drain `drain` asked: it is at a snapshot
// boundary, with no worker, and must be placed again whatever the deadline says.
bool stoppedAtBoundary(const ClusterState &state, const std::string &contract, int64_t drain) {
  auto assigned = state.assigned.find(contract);
  return assigned != state.assigned.end() && readStop(state, contract, assigned->second, drain).stopped();
}

// The drain a job follows: the first of its nodes (in assignment order) drained now.
const ClusterState::DrainRecord *drainOf(const std::vector<AssignedPlan> &list,
                                         const std::map<std::string, const ClusterState::DrainRecord *> &active,
                                         std::string &node) {
  for (const AssignedPlan &a : list)
    if (auto d = active.find(a.node); d != active.end()) {
      node = a.node;
      return d->second;
    }
  return nullptr;
}

} // namespace

std::vector<std::string> jobsToDrain(const ClusterState &state, const std::string &node) {
  std::vector<std::string> jobs;
  for (const auto &[contract, list] : state.assigned) {
    if (!state.contracts.count(contract))
      continue; // withdrawn: its assignments go anyway
    auto here = std::find_if(list.begin(), list.end(), [&](const AssignedPlan &a) { return a.node == node; });
    // A borrower is not drained: it leaves at once, ended there (Borrowers.h).
    if (here != list.end() && !here->borrower() && !endedByItself(state, *here, contract))
      jobs.push_back(contract);
  }
  return jobs;
}

std::map<std::string, std::string> decideDrains(const ClusterState &state, const std::set<std::string> &staying,
                                                const Clock &clock, const ReconcileOptions &options,
                                                int64_t leaderRevision, Decision &out) {
  std::map<std::string, std::string> moves;
  const int64_t now = clock.unixMs();
  out.report.unreadableDrains = state.unreadableDrainsNew;

  // The drains in force this round, and those whose deadline ends them.
  std::map<std::string, const ClusterState::DrainRecord *> active;
  for (const auto &[node, record] : state.drains) {
    if (record.drain.timedOut || !state.nodes.count(node))
      continue;
    std::vector<std::string> left = jobsToDrain(state, node);
    if (left.empty())
      continue; // drained
    // A job that stopped at its boundary just before the deadline still moves (this round); the
    // drain times out once only jobs that did not stop are left.
    bool stopped = std::any_of(left.begin(), left.end(),
                               [&](const std::string &job) { return stoppedAtBoundary(state, job, record.modRevision); });
    if (now >= record.drain.deadlineUnixMs && !record.drain.force && !stopped) {
      Drain timedOut = record.drain;
      timedOut.timedOut = true;
      out.drains.push_back({node, record.modRevision, etcd::TxnOp::put(drainKey(node), encodeDrain(timedOut))});
      out.report.drains.push_back(node + ": timed out with " + llvm::join(left, ", ") +
                                  " still there; without --force they run on, on the cordoned node");
      continue;
    }
    active[node] = &record;
    out.report.stopping = true;
  }

  for (const auto &[contract, list] : state.assigned) {
    if (!staying.count(contract))
      continue;
    std::string node;
    const ClusterState::DrainRecord *record = drainOf(list, active, node);
    auto here = std::find_if(list.begin(), list.end(), [&](const AssignedPlan &a) { return a.node == node; });
    if (!record || endedByItself(state, *here, contract)) {
      // No drain (any more) for this job: an ask left from one that went or timed out is withdrawn.
      if (stopAsked(list, PlannedStop::Cause::Drain)) {
        out.actions.push_back(stopAction(contract, list, std::nullopt, leaderRevision));
        out.report.drains.push_back(contract + ": planned stop withdrawn (its drain is over)");
      }
      continue;
    }
    const std::string cause = "drain of " + node + ": ";
    const int64_t drain = record->modRevision; // the drain's id
    const StopProgress progress = readStop(state, contract, list, drain);
    if (progress.noWorker) {
      moves[contract] = cause; // it holds resources only: nothing to stop
      continue;
    }
    if (progress.stopped()) {
      const std::string step = std::to_string(progress.afterStep);
      moves[contract] = cause + "stopped after step " + step + ": ";
      out.report.drains.push_back(node + ": " + contract + " stopped after step " + step +
                                  "; placing it again, whole, off the node");
      continue;
    }
    if (now >= record->drain.deadlineUnixMs) {
      if (!record->drain.force)
        continue; // another job of the node is moving this round; this one waits for the time-out
      moves[contract] = cause + "deadline passed (--force), moved from its newest snapshot: ";
      out.report.drains.push_back(node + ": " + contract + " not stopped by the deadline; moved (--force)");
      continue;
    }
    if (uint64_t chosen = advanceStop(state, contract, list, progress, PlannedStop::Cause::Drain, drain, cause, clock,
                                      options, leaderRevision, out))
      out.report.drains.push_back(node + ": " + contract + " asked to stop after step " + std::to_string(chosen));
  }
  return moves;
}

void decidePolicyDrains(const ClusterState &state, const ClusterConfig &config, ReconcileMemory &memory,
                        const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision, Decision &out) {
  std::set<std::string> blocked;
  for (const auto &[node, health] : state.health) {
    auto registered = state.nodes.find(node);
    if (registered == state.nodes.end() || !registered->second || state.drains.count(node) ||
        state.unreadableDrains.count(node) || !llvm::is_contained(config.drainOn, healthLevelName(health.level)))
      continue;
    if (std::vector<std::string> blockers = drainBlockers(state, node, memory, clock, options, leaderRevision);
        !blockers.empty()) {
      blocked.insert(node);
      if (!memory.policyDrainsBlocked.count(node))
        out.report.drains.push_back(node + ": not drained by policy while a job there cannot be placed whole on the "
                                           "other nodes (" + blockers.front() + "); it stays cordoned");
      continue;
    }
    const int64_t now = clock.unixMs();
    Drain drain{leaderRevision, now, now + int64_t(config.drainDeadlineNs / 1000000), false, false};
    out.drains.push_back({node, 0, etcd::TxnOp::put(drainKey(node), encodeDrain(drain))});
    out.report.drains.push_back(node + ": drained by policy (health " + healthLevelName(health.level) + ")");
    out.report.stopping = true;
  }
  memory.policyDrainsBlocked = std::move(blocked);
}

std::vector<std::string> drainBlockers(const ClusterState &state, const std::string &node, ReconcileMemory memory,
                                       const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision) {
  std::vector<std::string> jobs = jobsToDrain(state, node);
  if (jobs.empty())
    return {};
  ClusterState drained = state;
  drained.cordons[node] = Cordon{"operator", "draining", leaderRevision, clock.unixMs()};
  drained.drains.erase(node);
  for (const std::string &job : jobs)
    drained.assigned.erase(job);
  ReconcileOptions look = options;
  look.policyDrains = false; // a look, not a round: it drains nothing itself
  Decision decision = decide(drained, memory, clock, look, leaderRevision);
  std::vector<std::string> blockers;
  for (const std::string &refused : decision.report.refused)
    for (const std::string &job : jobs)
      if (llvm::StringRef(refused).starts_with(job + ": "))
        blockers.push_back(refused);
  return blockers;
}

} // namespace msc::cluster
