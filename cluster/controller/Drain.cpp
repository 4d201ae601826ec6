#include "cluster/controller/Drain.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>

namespace msc::cluster {
namespace {

// Steps a planned stop is ahead of the newest step answered when no agent knows how long a step takes.
constexpr uint64_t kDrainLeadSteps = 5;
// Never fewer: the step after the newest answered may already be under way on some rank.
constexpr uint64_t kMinLeadSteps = 2;

const AssignmentStatus *statusOf(const ClusterState &state, const AssignedPlan &a, const std::string &contract) {
  auto node = state.statuses.find(a.node);
  if (node == state.statuses.end())
    return nullptr;
  auto s = node->second.find(contract);
  return s == node->second.end() ? nullptr : &s->second;
}

// Whether the job's worker on `a`'s node ended there by itself (exited or killed, not at a planned
// stop), as the status of that very assignment says (one of an earlier assignment of the job there,
// not yet rewritten by the agent, says nothing of this one): a job that is over is not moved.
bool ended(const ClusterState &state, const AssignedPlan &a, const std::string &contract) {
  const AssignmentStatus *s = statusOf(state, a, contract);
  return s && s->leaderRevision == a.assignment.leaderRevision && (s->worker == "exited" || s->worker == "killed") &&
         !(s->stop && s->stop->stoppedAt);
}

// The assignments of `list` written again with `stop` (none: withdrawn), as this leader's.
ContractAction stopAction(const std::string &contract, const std::vector<AssignedPlan> &list,
                          std::optional<PlannedStop> stop, int64_t leaderRevision) {
  ContractAction action{ContractAction::Kind::Stop, contract, {}};
  for (const AssignedPlan &a : list) {
    Assignment next = a.assignment;
    next.stop = stop;
    // An agent refuses an assignment older than the newest leader it heard from (ERR_CLUSTER_003).
    next.leaderRevision = leaderRevision;
    action.ops.push_back(etcd::TxnOp::put(a.key, encodeAssignment(next)));
  }
  return action;
}

// The contract's event, said once (as decide() says its own).
void addEvent(const ClusterState &state, const std::string &contract, const std::string &text, const Clock &clock,
              ContractAction &action) {
  auto stored = state.events.find(contract);
  std::vector<ContractEvent> events = stored == state.events.end() ? std::vector<ContractEvent>{} : decodeEvents(stored->second);
  if (!events.empty() && events.back().text == text)
    return;
  events.push_back({clock.unixMs(), text});
  action.ops.push_back(etcd::TxnOp::put(std::string(kContractEventsPrefix) + contract, encodeEvents(events)));
}

// Whether every rank of the job stopped after the step its drain `drain` asked: it is at a snapshot
// boundary, with no worker, and must be placed again whatever the deadline says.
bool stoppedAtBoundary(const ClusterState &state, const std::string &contract, int64_t drain) {
  auto assigned = state.assigned.find(contract);
  if (assigned == state.assigned.end())
    return false;
  return std::all_of(assigned->second.begin(), assigned->second.end(), [&](const AssignedPlan &a) {
    const std::optional<PlannedStop> &stop = a.assignment.stop;
    const AssignmentStatus *s = statusOf(state, a, contract);
    return stop && stop->drain == drain && stop->afterStep && s && s->stop && s->stop->drain == drain &&
           s->stop->attempt == stop->attempt && s->stop->stoppedAt == stop->afterStep;
  });
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
    if (here != list.end() && !here->borrower() && !ended(state, *here, contract))
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
    out.report.draining = true;
  }

  for (const auto &[contract, list] : state.assigned) {
    if (!staying.count(contract))
      continue;
    std::string node;
    const ClusterState::DrainRecord *record = drainOf(list, active, node);
    bool asked = std::any_of(list.begin(), list.end(), [](const AssignedPlan &a) { return a.assignment.stop.has_value(); });
    auto here = std::find_if(list.begin(), list.end(), [&](const AssignedPlan &a) { return a.node == node; });
    if (!record || ended(state, *here, contract)) {
      // No drain (any more) for this job: an ask left from one that went or timed out is withdrawn.
      if (asked) {
        out.actions.push_back(stopAction(contract, list, std::nullopt, leaderRevision));
        out.report.drains.push_back(contract + ": planned stop withdrawn (its drain is over)");
      }
      continue;
    }
    const std::string cause = "drain of " + node + ": ";
    const int64_t drain = record->modRevision; // the drain's id

    // Where the asks stand: the attempt every assignment was asked (0: not all asked the same).
    uint32_t attempt = list.front().assignment.stop && list.front().assignment.stop->drain == drain
                           ? list.front().assignment.stop->attempt : 0;
    uint64_t afterStep = attempt ? list.front().assignment.stop->afterStep : 0;
    for (const AssignedPlan &a : list)
      if (!a.assignment.stop || a.assignment.stop->drain != drain || a.assignment.stop->attempt != attempt ||
          a.assignment.stop->afterStep != afterStep)
        attempt = 0;
    std::vector<const StopAnswer *> answers;
    bool noWorker = true;
    for (const AssignedPlan &a : list) {
      const AssignmentStatus *s = statusOf(state, a, contract);
      noWorker &= s && s->worker == "none" && s->state != "not-applied";
      answers.push_back(s && s->stop && s->stop->drain == drain && s->stop->attempt == attempt && attempt ? &*s->stop
                                                                                                         : nullptr);
    }
    bool allAnswered = std::all_of(answers.begin(), answers.end(), [](const StopAnswer *a) { return a != nullptr; });

    if (noWorker) {
      moves[contract] = cause; // it holds resources only: nothing to stop
      continue;
    }
    if (afterStep && allAnswered &&
        std::all_of(answers.begin(), answers.end(), [&](const StopAnswer *a) { return a->stoppedAt == afterStep; })) {
      moves[contract] = cause + "stopped after step " + std::to_string(afterStep) + ": ";
      out.report.drains.push_back(node + ": " + contract + " stopped after step " + std::to_string(afterStep) +
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
    if (!attempt) {
      uint32_t next = 1;
      for (const AssignedPlan &a : list)
        if (a.assignment.stop && a.assignment.stop->drain == drain)
          next = std::max(next, a.assignment.stop->attempt);
      out.actions.push_back(stopAction(contract, list, PlannedStop{drain, next, 0}, leaderRevision));
      continue;
    }
    if (std::any_of(answers.begin(), answers.end(), [](const StopAnswer *a) { return a && a->missedAt; })) {
      ContractAction again = stopAction(contract, list, PlannedStop{drain, attempt + 1, 0}, leaderRevision);
      addEvent(state, contract, cause + "a rank went past step " + std::to_string(afterStep) + " before it was asked; asking again",
               clock, again);
      out.actions.push_back(std::move(again));
      continue;
    }
    if (afterStep || !allAnswered)
      continue; // on its way to the step, or waiting for the answers
    uint64_t newest = 0, stepMs = 0;
    for (const StopAnswer *a : answers) {
      newest = std::max(newest, a->step);
      if (a->stepMs && (!stepMs || a->stepMs < stepMs))
        stepMs = a->stepMs; // the quickest rank's pace: the most steps the lead time can hold
    }
    uint64_t leadMs = uint64_t(std::max<int64_t>(0, options.drainLead.count()));
    uint64_t lead = stepMs ? (leadMs + stepMs - 1) / stepMs : kDrainLeadSteps;
    uint64_t stopAfter = newest + std::max(lead, kMinLeadSteps);
    ContractAction ask = stopAction(contract, list, PlannedStop{drain, attempt, stopAfter}, leaderRevision);
    addEvent(state, contract, cause + "asked to stop after step " + std::to_string(stopAfter), clock, ask);
    out.actions.push_back(std::move(ask));
    out.report.drains.push_back(node + ": " + contract + " asked to stop after step " + std::to_string(stopAfter));
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
    out.report.draining = true;
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
