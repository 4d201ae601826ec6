// How an elastic job (`nodes = MIN..MAX`) placed below its most grows back when capacity returns
// (a node registers, a cordon is lifted, a job ends), decided purely as the rest of Decide.h. A
// grow is a planned move, not a fault: the job is stopped at a snapshot boundary (PlannedStops.h)
// and then placed again, whole, at the larger size; it resumes from the step it stopped after,
// replaying no step.
//   - It starts only in a round that places nothing else, with no contract waiting out a lost
//     node's grace, and only when the leader's own placement, on a copy of the state without the
//     job's assignments, gives the job more nodes than it has and refuses no contract that this
//     round does not refuse already: a grow never takes what a waiting job could run on.
//   - Its stop's id is the store revision of the read that decided it. A drain of one of the job's
//     nodes replaces the grow's ask with its own.
//   - A job whose ranks do not stop at a boundary within `ReconcileOptions::growTimeout` (a worker
//     that reports no steps, one that keeps missing the step) has its ask withdrawn and stays at its
//     size; this leader does not ask that placement again.
//   - Placed again, the job gets the largest size the cluster gives it then: less than the look
//     promised when capacity went meanwhile (a node lost, a contract submitted and placed first).
#pragma once

#include "cluster/controller/ClusterState.h"
#include "cluster/controller/Decide.h"
#include "support/Clock.h"

#include <map>
#include <set>
#include <string>

namespace msc::cluster {

// The jobs whose grow stopped them at a boundary this round, each with the cause its event names
// ("grow from 2 nodes: stopped after step 60: "); asks and withdrawals go into `out`. `staying`:
// the contracts that keep their placement this round (nothing else moves them).
std::map<std::string, std::string> decideGrowths(const ClusterState &state, const std::set<std::string> &staying,
                                                 ReconcileMemory &memory, const Clock &clock,
                                                 const ReconcileOptions &options, int64_t leaderRevision, Decision &out);

// The grows this round starts (their first ask), from a round `out` decided already: see above.
void startGrowths(const ClusterState &state, const std::set<std::string> &staying, ReconcileMemory &memory,
                  const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision, Decision &out);

} // namespace msc::cluster
