// A cluster in virtual time driven by the project's own decision code (issue 30): simulated nodes
// register under leases on a simulated store (SimStore.h), faults drawn from a FaultModel strike
// them, and the leading controller's real read, decide and commit (cluster/controller/Reconcile.h)
// place the job, record the faults, cordon lemons by the cluster config's policy and place the job
// again when a node is lost, on the harness's virtual clock. The nodes' supervisors decide each
// restart with the executor's RestartPolicy. The harness itself decides nothing a component of the
// project decides: it moves time, draws faults, plays the nodes' agents (a registration that
// expires with its lease, a status that counts the workers' faults, a node back from repair) and
// accounts where the job's time went.
//
// The job is one contract ("job"), synchronous across its nodes: any interruption of a rank stops
// every rank, and it resumes from its newest snapshot. An elastic job (`nodes = MIN..MAX`) runs at
// the size the controller gives it; the share of its most that it runs at is its program goodput.
// An elastic job below its most grows back as the controller decides (Grow.h): the played agents
// answer its planned stop with the job's step and stop every rank after the step it chose, with its
// snapshot, and the controller places the job again, larger. Not simulated: drains, borrowers.
#pragma once

#include "executor/supervise/RestartPolicy.h"
#include "sim/FaultModel.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace msc::sim {

// What each step of a recovery costs, in virtual time (the harness's caller says where each was
// measured).
struct ClusterCosts {
  uint64_t leaseTtlNs = 0;      // a node's agent gone: its registration expires with its lease after this
  uint64_t lostNodeGraceNs = 0; // the controller's grace before it places a lost node's job again
  uint64_t reconcileNs = 0;     // a change of the store to the controller's commit of its round
  uint64_t crashDetectNs = 0;   // a worker that ended, seen by its supervisor
  uint64_t hangDetectNs = 0;    // a worker that hangs (FaultClass::WorkerHung), seen by its supervisor
  uint64_t restartNs = 0;       // every rank started again and restored, to its first step
  uint64_t stepNs = 0;          // a training step (what a planned stop's answer counts in; 0: 1 s)
  // A warm standby worker per rank (fault_tolerance.standby_worker): a worker fault restarted in
  // place takes this instead of restartNs while the restart policy has a restart left in its budget,
  // as the node's supervisor keeps one only then. A new placement starts cold (its standby stood by
  // for the old place). 0: no standby.
  uint64_t standbyRestartNs = 0;
  uint64_t snapshotEveryNs = 0; // training between snapshots (0: none)
  uint64_t snapshotStallNs = 0; // the job stands still while one is taken (0: in the background)
  uint64_t repairNs = 0;        // a node taken out is registered again after this
  exec::RestartPolicyConfig policy = {.recoverable = true, .maxRestarts = UINT32_MAX, .crashLoopAfter = 0};
};

struct ClusterSpec {
  unsigned nodes = 0;
  unsigned gpusPerNode = 8;      // what the fault model's GPU causes strike per node
  std::string topologyYaml;      // every node's registration (hal::writeTopologyYaml of a recorded node)
  std::string contractSource;    // the job, submitted as contract "job" (its `contract` line names it so)
  std::string clusterConfig;     // cluster-config.yaml published before the job (empty: none)
  std::string stdlibDir;         // the contracts' imports
  std::vector<FaultCause> causes;
  // Lemon nodes: this many nodes, spread evenly, whose GPU and node causes strike `lemonFactor`
  // times as often as the others' (and still do after a repair).
  unsigned lemonNodes = 0;
  double lemonFactor = 1;
  ClusterCosts costs;
  // Told each thing that happens, at its virtual time, for a person to follow one run (null: quiet).
  std::function<void(uint64_t nowNs, const std::string &what)> trace = nullptr;
};

struct ClusterRun {
  double hours = 0;      // the time simulated
  unsigned mostNodes = 0; // the job's size when whole (its first placement's)
  // Where the job's time went, in hours; they add up to `hours`.
  double training = 0;   // trained and kept, at whatever size
  double replayed = 0;   // trained, lost at an interruption, to be run again
  double snapshots = 0;  // standing still for snapshots
  double detection = 0;  // an interruption until its supervisor (or, for a lost node, the store) saw it
  double unplaced = 0;   // the job had no placement: the controller's grace and round, or no nodes
  double restart = 0;    // the ranks starting again and restoring, the restart policy's back-off included
  double stopped = 0;    // the restart policy gave up (a crash loop, no budget left): nothing ran
  double sizedTraining = 0; // `training` weighted by the size trained at over mostNodes
  uint64_t interruptions = 0, lostNodes = 0, workerFaults = 0;
  uint64_t placements = 0, rounds = 0, cordoned = 0, refusedRounds = 0;
  uint64_t grows = 0; // the job stopped at a step the controller chose and was placed again, larger
  // Google's ML goodput terms: the share of the time the job held its resources (scheduling), of
  // that the share it trained and kept (runtime), of that the share of its full size (program).
  double schedulingGoodput() const { return hours > 0 ? (hours - unplaced) / hours : 0; }
  double runtimeGoodput() const { return hours > unplaced ? training / (hours - unplaced) : 0; }
  double programGoodput() const { return training > 0 ? sizedTraining / training : 0; }
  double ettr() const { return hours > 0 ? sizedTraining / hours : 0; }
};

// Runs `spec` for `durationNs` of virtual time with the faults `seed` draws.
ClusterRun runCluster(const ClusterSpec &spec, uint64_t durationNs, uint64_t seed);

} // namespace msc::sim
