#include "cluster/controller/PlannedStops.h"

#include <algorithm>

namespace msc::cluster {
namespace {

// Steps a planned stop is ahead of the newest step answered when no agent knows how long a step takes.
constexpr uint64_t kDefaultLeadSteps = 5;
// Never fewer: the step after the newest answered may already be under way on some rank.
constexpr uint64_t kMinLeadSteps = 2;

} // namespace

const AssignmentStatus *statusOf(const ClusterState &state, const AssignedPlan &a, const std::string &contract) {
  auto node = state.statuses.find(a.node);
  if (node == state.statuses.end())
    return nullptr;
  auto s = node->second.find(contract);
  return s == node->second.end() ? nullptr : &s->second;
}

bool endedByItself(const ClusterState &state, const AssignedPlan &a, const std::string &contract) {
  const AssignmentStatus *s = statusOf(state, a, contract);
  return s && s->leaderRevision == a.assignment.leaderRevision && (s->worker == "exited" || s->worker == "killed") &&
         !(s->stop && s->stop->stoppedAt);
}

bool stopAsked(const std::vector<AssignedPlan> &list, PlannedStop::Cause cause) {
  return std::any_of(list.begin(), list.end(),
                     [&](const AssignedPlan &a) { return a.assignment.stop && a.assignment.stop->cause == cause; });
}

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

void addEvent(const ClusterState &state, const std::string &contract, const std::string &text, const Clock &clock,
              ContractAction &action) {
  auto stored = state.events.find(contract);
  std::vector<ContractEvent> events = stored == state.events.end() ? std::vector<ContractEvent>{} : decodeEvents(stored->second);
  if (!events.empty() && events.back().text == text)
    return;
  events.push_back({clock.unixMs(), text});
  action.ops.push_back(etcd::TxnOp::put(std::string(kContractEventsPrefix) + contract, encodeEvents(events)));
}

bool StopProgress::allAnswered() const {
  return !answers.empty() && std::all_of(answers.begin(), answers.end(), [](const StopAnswer *a) { return a != nullptr; });
}

bool StopProgress::stopped() const {
  return afterStep && allAnswered() &&
         std::all_of(answers.begin(), answers.end(), [&](const StopAnswer *a) { return a->stoppedAt == afterStep; });
}

StopProgress readStop(const ClusterState &state, const std::string &contract, const std::vector<AssignedPlan> &list,
                      int64_t id) {
  StopProgress p;
  const std::optional<PlannedStop> &first = list.front().assignment.stop;
  p.attempt = first && first->id == id ? first->attempt : 0;
  p.afterStep = p.attempt ? first->afterStep : 0;
  for (const AssignedPlan &a : list) {
    const std::optional<PlannedStop> &stop = a.assignment.stop;
    if (!stop || stop->id != id || stop->attempt != p.attempt || stop->afterStep != p.afterStep)
      p.attempt = 0, p.afterStep = 0;
  }
  for (const AssignedPlan &a : list) {
    const AssignmentStatus *s = statusOf(state, a, contract);
    p.noWorker &= s && s->worker == "none" && s->state != "not-applied";
    p.answers.push_back(p.attempt && s && s->stop && s->stop->id == id && s->stop->attempt == p.attempt ? &*s->stop
                                                                                                       : nullptr);
  }
  return p;
}

uint64_t advanceStop(const ClusterState &state, const std::string &contract, const std::vector<AssignedPlan> &list,
                     const StopProgress &progress, PlannedStop::Cause cause, int64_t id, const std::string &eventCause,
                     const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision, Decision &out) {
  if (!progress.attempt) {
    uint32_t next = 1;
    for (const AssignedPlan &a : list)
      if (a.assignment.stop && a.assignment.stop->id == id)
        next = std::max(next, a.assignment.stop->attempt);
    out.actions.push_back(stopAction(contract, list, PlannedStop{id, next, 0, cause}, leaderRevision));
    return 0;
  }
  const std::vector<const StopAnswer *> &answers = progress.answers;
  if (std::any_of(answers.begin(), answers.end(), [](const StopAnswer *a) { return a && a->missedAt; })) {
    ContractAction again = stopAction(contract, list, PlannedStop{id, progress.attempt + 1, 0, cause}, leaderRevision);
    addEvent(state, contract,
             eventCause + "a rank went past step " + std::to_string(progress.afterStep) + " before it was asked; asking again",
             clock, again);
    out.actions.push_back(std::move(again));
    return 0;
  }
  if (progress.afterStep || !progress.allAnswered())
    return 0; // on its way to the step, or waiting for the answers
  uint64_t newest = 0, stepMs = 0;
  for (const StopAnswer *a : answers) {
    newest = std::max(newest, a->step);
    if (a->stepMs && (!stepMs || a->stepMs < stepMs))
      stepMs = a->stepMs; // the quickest rank's pace: the most steps the lead time can hold
  }
  uint64_t leadMs = uint64_t(std::max<int64_t>(0, options.stopLead.count()));
  uint64_t lead = stepMs ? (leadMs + stepMs - 1) / stepMs : kDefaultLeadSteps;
  uint64_t stopAfter = newest + std::max(lead, kMinLeadSteps);
  ContractAction ask = stopAction(contract, list, PlannedStop{id, progress.attempt, stopAfter, cause}, leaderRevision);
  addEvent(state, contract, eventCause + "asked to stop after step " + std::to_string(stopAfter), clock, ask);
  out.actions.push_back(std::move(ask));
  return stopAfter;
}

} // namespace msc::cluster
