// What can go wrong with a supervised job, how a worker's end is read, and the detection budget
// the plan sets: the vocabulary every room of the supervisor shares.
//
// The worker talks to the supervisor through the control page (worker/WorkerApi.h) and its exit
// status: 0 completed; 74 a data read failed (nvme-io-error); 73 a snapshot write found the disk
// full; 75 another rank of the job went away and took this one's collective with it (peer-lost: its
// own fault is that rank's); 3 nothing valid to resume from (the supervisor stops: never a silent
// fresh start).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace msc::plan {
class FaultTolerance;
}

namespace msc::exec {

enum class FaultClass { GpuLost, NvmeIoError, RdmaPortDown, WorkerCrashed, WorkerHung, DiskFull, NodeLost, PeerLost };
const char *faultClassName(FaultClass c);
// A fault of a device the node holds for the contract (its discovery is stale after it).
bool isDeviceFault(FaultClass c);

struct Fault {
  FaultClass kind = FaultClass::WorkerCrashed;
  std::string detail;  // "SIGKILL", "exit 74", "sim slice 3 on gpu 0 missed 3 heartbeats"
  unsigned gpu = 0;    // GpuLost: the GPU
  std::optional<unsigned> rank = std::nullopt; // the rank it is of (its exit, its silence); none: the job's resources
};

// Worker exit statuses with a meaning to the supervisor (the worker side: WorkerApi.h users).
constexpr int kWorkerExitDiskFull = 73;
constexpr int kWorkerExitIoError = 74;
constexpr int kWorkerExitPeerLost = 75; // EX_TEMPFAIL

// How a worker ended (a waitpid status): nullopt when it completed (exit 0).
std::optional<Fault> classifyWorkerExit(int waitStatus);
// How log lines name a signal ("SIGKILL").
std::string signalName(int sig);

// The plan's worker heartbeat and the beats that may be missed before a worker counts as hung (the
// language's defaults where the plan sets none): for the supervisor's workers and attached processes.
uint64_t heartbeatIntervalNs(const plan::FaultTolerance &ft);
uint32_t heartbeatMisses(const plan::FaultTolerance &ft);
// heartbeat x misses: the silence after which a worker that has beaten is hung.
uint64_t hangBudgetNs(const plan::FaultTolerance &ft);
// start_within: the silence after its start after which a worker that has not beaten is hung (0: none).
uint64_t startBudgetNs(const plan::FaultTolerance &ft);
// How often workers' beats are sampled: several times per heartbeat, so that a hang is declared
// within a small part of a heartbeat after the budget.
uint64_t beatSampleIntervalNs(const plan::FaultTolerance &ft);

} // namespace msc::exec
