#include "executor/supervise/Fault.h"

#include "ir/FieldDefaults.h"
#include "plan/plan.pb.h"

#include <algorithm>
#include <cstring>
#include <sys/wait.h>

namespace msc::exec {

namespace {
// A worker's beats are sampled this many times per heartbeat interval. The silence of a hung worker
// is measured from the sample that first saw its last beat, so a hang is declared up to one sample
// period after `misses` heartbeats of silence: with one sample per heartbeat that was up to a whole
// heartbeat (200 ms) past the detection budget, with ten it is 20 ms. Reading the page is a load.
constexpr uint64_t kBeatSamplesPerHeartbeat = 10;
} // namespace

const char *faultClassName(FaultClass c) {
  switch (c) {
  case FaultClass::GpuLost: return "gpu-lost";
  case FaultClass::NvmeIoError: return "nvme-io-error";
  case FaultClass::RdmaPortDown: return "rdma-port-down";
  case FaultClass::WorkerCrashed: return "worker-crashed";
  case FaultClass::WorkerHung: return "worker-hung";
  case FaultClass::DiskFull: return "disk-full";
  case FaultClass::NodeLost: return "node-lost";
  case FaultClass::PeerLost: return "peer-lost";
  }
  return "?";
}

bool isDeviceFault(FaultClass c) {
  return c == FaultClass::GpuLost || c == FaultClass::RdmaPortDown || c == FaultClass::NvmeIoError;
}

std::string signalName(int sig) {
  const char *name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

std::optional<Fault> classifyWorkerExit(int status) {
  if (WIFSIGNALED(status))
    return Fault{FaultClass::WorkerCrashed, signalName(WTERMSIG(status))};
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  switch (code) {
  case 0: return std::nullopt;
  case kWorkerExitIoError: return Fault{FaultClass::NvmeIoError, "exit 74: a data read failed"};
  case kWorkerExitDiskFull: return Fault{FaultClass::DiskFull, "exit 73: a snapshot write found the disk full"};
  case kWorkerExitPeerLost: return Fault{FaultClass::PeerLost, "exit 75: another rank of the job went away"};
  default: return Fault{FaultClass::WorkerCrashed, "exit " + std::to_string(code)};
  }
}

// A plan that sets none (one written by hand, or by a tool of its own) gets the language's defaults,
// the values lowering writes into every plan it makes.
uint64_t heartbeatIntervalNs(const plan::FaultTolerance &ft) {
  return ft.heartbeat_ns() ? ft.heartbeat_ns() : uint64_t(ir::defaults::fault_tolerance::heartbeat);
}

uint32_t heartbeatMisses(const plan::FaultTolerance &ft) {
  return std::max(1u, ft.heartbeat_misses() ? ft.heartbeat_misses()
                                            : uint32_t(ir::defaults::fault_tolerance::heartbeat_misses));
}

uint64_t hangBudgetNs(const plan::FaultTolerance &ft) {
  uint64_t heartbeat = heartbeatIntervalNs(ft);
  uint32_t misses = heartbeatMisses(ft);
  return heartbeat > UINT64_MAX / misses ? UINT64_MAX : uint64_t(misses) * heartbeat;
}

uint64_t startBudgetNs(const plan::FaultTolerance &ft) { return ft.start_within_ns(); }

uint64_t beatSampleIntervalNs(const plan::FaultTolerance &ft) {
  return std::max<uint64_t>(heartbeatIntervalNs(ft) / kBeatSamplesPerHeartbeat, 1'000'000);
}

} // namespace msc::exec
