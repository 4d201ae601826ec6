// How the leader stops a running job at a snapshot boundary, for whatever then moves it: a drain
// (Drain.h) or an elastic job's grow (Grow.h). One stop, one id (PlannedStop::id), in rounds that
// each read what the agents answered:
//   1. every assignment of the job is asked for a planned stop, step not chosen;
//   2. once every agent answered the job's step and step time, the leader chooses the step S every
//      rank stops after: the newest step answered plus the steps the lead time covers (the ask must
//      reach every rank before any gets there: ranks in lockstep that stopped at different steps
//      would wait for each other in the next step's collective);
//   3. once every rank stopped after S with its snapshot, the caller places the job again, whole:
//      it resumes from S, replaying no step.
// A rank that went past S before the ask reached it ("stop-missed") is asked again (a new attempt).
// What happens at a deadline is the caller's: a drain's is the operator's, a grow's the leader's.
#pragma once

#include "cluster/controller/ClusterState.h"
#include "cluster/controller/Decide.h"
#include "support/Clock.h"

#include <optional>
#include <string>
#include <vector>

namespace msc::cluster {

// The status the agent of `a`'s node wrote for `contract` (null: none).
const AssignmentStatus *statusOf(const ClusterState &state, const AssignedPlan &a, const std::string &contract);

// Whether the job's worker on `a`'s node ended there by itself (exited or killed, not at a planned
// stop), as the status of that very assignment says (one of an earlier assignment of the job there,
// not yet rewritten by the agent, says nothing of this one): a job that is over is not moved.
bool endedByItself(const ClusterState &state, const AssignedPlan &a, const std::string &contract);

// Whether any assignment of the job carries a stop of `cause`.
bool stopAsked(const std::vector<AssignedPlan> &list, PlannedStop::Cause cause);

// The assignments of `list` written again with `stop` (none: withdrawn), as this leader's.
ContractAction stopAction(const std::string &contract, const std::vector<AssignedPlan> &list,
                          std::optional<PlannedStop> stop, int64_t leaderRevision);

// The contract's event, said once (as decide() says its own), added to `action`.
void addEvent(const ClusterState &state, const std::string &contract, const std::string &text, const Clock &clock,
              ContractAction &action);

// Where the job's stop `id` stands, as read this round.
struct StopProgress {
  uint32_t attempt = 0;   // the attempt every assignment was asked (0: not all asked the same)
  uint64_t afterStep = 0; // the step chosen (0: none yet)
  bool noWorker = true;   // no rank runs a worker: it holds resources only, nothing to stop
  // The answers to the attempt, one per assignment (null: not answered).
  std::vector<const StopAnswer *> answers;
  bool allAnswered() const;
  // Every rank stopped after the step chosen: the job is at a snapshot boundary, with no worker.
  bool stopped() const;
};
StopProgress readStop(const ClusterState &state, const std::string &contract, const std::vector<AssignedPlan> &list,
                      int64_t id);

// The next round of the stop: the first ask (or a new attempt after a miss), or the step chosen
// once every rank answered; nothing while the ranks are on their way to it. `cause`: the stop's,
// and `eventCause` the events' prefix ("drain of n1: "). Returns the step it chose (0: none).
uint64_t advanceStop(const ClusterState &state, const std::string &contract, const std::vector<AssignedPlan> &list,
                     const StopProgress &progress, PlannedStop::Cause cause, int64_t id, const std::string &eventCause,
                     const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision, Decision &out);

} // namespace msc::cluster
