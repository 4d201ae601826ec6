// One synchronous job on a whole cluster, in virtual time (issue 30): every GPU takes part in every
// step, so any interruption stops all of them and the job resumes from its newest snapshot, as
// Llama 3's pre-training did and as FT-HSDP's baseline does. Interruptions come from a FaultModel;
// what one costs comes from SyncJobCosts; whether and when the job restarts is decided by the
// executor's own RestartPolicy (executor/supervise/RestartPolicy.h) on the harness's virtual clock,
// back-off included when faults come faster than the job can recover.
//
// Where the time goes is accounted exactly: training kept, training lost and run again (since the
// newest snapshot), snapshots the job stood still for, detection, waiting for a node to come back
// from repair, re-placement on a spare, and the restart; they add up to the time simulated. Faults
// that strike a spare node are not drawn: the model is the job's nodes'.
#pragma once

#include "executor/supervise/RestartPolicy.h"
#include "sim/FaultModel.h"

#include <cstdint>

namespace msc::sim {

struct SyncJobCosts {
  uint64_t snapshotEveryNs = 0; // training time between snapshots (0: none, a fault loses everything)
  uint64_t snapshotStallNs = 0; // the job stands still while one is taken (0: written in the background)
  uint64_t crashDetectNs = 0;   // a worker that ended or a device reported lost: noticed after this
  uint64_t hangDetectNs = 0;    // a worker that hangs (FaultClass::WorkerHung): noticed after this
  uint64_t restartNs = 0;       // every rank stopped, started again and restored, to its first step
  uint64_t replaceNodeNs = 0;   // a node taken out (takesNodeOut) given to a spare: the re-placement
  uint64_t repairNs = 0;        // a node taken out is back, as a spare, after this
  unsigned spareNodes = 0;      // nodes standing by beside the job's
  // The restart policy the job's supervisors run (recoverable: it resumes from snapshots).
  exec::RestartPolicyConfig policy = {.recoverable = true, .maxRestarts = UINT32_MAX, .crashLoopAfter = 0};
};

struct SyncJobRun {
  double hours = 0;           // the time simulated
  uint64_t interruptions = 0; // faults that stopped the job, those during a recovery included
  // Where the time went, in hours; the parts add up to `hours`.
  double training = 0;        // kept: trained and not lost
  double replayed = 0;        // trained, lost at a fault (after the newest snapshot), to be run again
  double snapshots = 0;       // standing still for snapshots
  double detection = 0;
  double waitingForNode = 0;  // no spare: waiting for a node to come back from repair
  double replacement = 0;     // a spare put in the lost node's place
  double restart = 0;         // the restart itself and the policy's back-off before it
  double ettr() const { return hours > 0 ? training / hours : 0; }
};

// Runs the job for `durationNs` of virtual time on the interruptions `model` draws with `seed`.
SyncJobRun runSyncJob(const FaultModel &model, const SyncJobCosts &costs, uint64_t durationNs, uint64_t seed);

} // namespace msc::sim
