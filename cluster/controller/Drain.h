// What the leader does about drained nodes (`mscale-cli cluster drain`, Keys.h: Drain), decided
// purely as the rest of Decide.h. Each job with a worker running on a draining node is moved at a
// snapshot boundary (PlannedStops.h: ask, choose the step S, every rank stopped after S), then
// placed again, whole, on nodes other than the drained one: it resumes from S, replaying no step.
// At the drain's deadline, a forced drain moves what is left as a lost node's jobs move (from their
// newest snapshot); one without force times out: the asks are withdrawn and the jobs run on, on the
// cordoned node. A job that ended there (its workers exited) is not moved; one that holds resources
// without a worker is moved at once. An ask whose drain is gone (uncordoned) or timed out is
// withdrawn.
#pragma once

#include "cluster/config/ClusterConfig.h"
#include "cluster/controller/ClusterState.h"
#include "cluster/controller/Decide.h"
#include "support/Clock.h"

#include <map>
#include <set>
#include <string>

namespace msc::cluster {

// The jobs of draining nodes that move this round, each with the cause its event names ("drain of
// n1: stopped after step 60: "). Asks, withdrawals and time-outs go into `out`. `staying`: the
// contracts decide() keeps where they are (a job already being placed again is not drained).
std::map<std::string, std::string> decideDrains(const ClusterState &state, const std::set<std::string> &staying,
                                                const Clock &clock, const ReconcileOptions &options,
                                                int64_t leaderRevision, Decision &out);

// The drains the cluster config's health.drain_on asks for: a registered node whose verdict it names
// and that has no drain record gets one (by this leader, deadline `config.drainDeadlineNs` from now,
// never forced), written as read (absent). A node with a job that cannot be placed whole elsewhere
// is not drained (said once in the report); it is drained once the job can be.
void decidePolicyDrains(const ClusterState &state, const ClusterConfig &config, ReconcileMemory &memory,
                        const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision, Decision &out);

// The jobs on `node` that a drain would move (a worker running there, or resources held without
// one), in name order: what must be placed whole elsewhere for the drain to be accepted.
std::vector<std::string> jobsToDrain(const ClusterState &state, const std::string &node);

// Whether the jobs a drain of `node` would move can each be placed whole on the other nodes, as
// the cluster is now: "contract: why" for each one that cannot (decide()'s own placement on the
// state with the node cordoned and those jobs unplaced). Empty: the drain may go ahead.
std::vector<std::string> drainBlockers(const ClusterState &state, const std::string &node, ReconcileMemory memory,
                                       const Clock &clock, const ReconcileOptions &options, int64_t leaderRevision);

} // namespace msc::cluster
