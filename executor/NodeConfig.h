// The node config of `mscale-exec serve --config node.yaml` (and `run --config`), in YAML like the
// node configs operators already write. Every key is optional; docs/executor.md lists them.
//
//   gpus: [0, 1]              # GPU indexes the executor may use (empty: all)
//   gpu_backend: auto         # auto | cuda | sim
//   rdma: { enabled: true, backend: auto }   # auto | ibverbs | sim
//   host_backend: real        # real | sim: whether the CPU, IO and memory appliers act on this host
//                             # (cgroups, affinity, sysfs, hugepages) or only hand the worker the
//                             # plan's variables and an ordinary memfd pool (a recorded node served
//                             # on a machine that lacks its CPUs and hugepages: SimHostAppliers.cpp)
//   nvme_scheduler: bfq       # written to /sys/block/<dev>/queue/scheduler of the plan's devices
//   hugepages: { auto_allocate: true }        # honour plans' reservations
//   allowed_users: [alice, 1001]
//   allowed_groups: [mscale]
//   socket_group: mscale      # group of the agent socket (mode 0660)
//   state_dir: /var/lib/mscale
//   max_frame_bytes: 16777216
//   strict_fingerprint: false
//   log_file: /var/log/mscale-exec.log
#pragma once

#include "executor/host/HostBackend.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace msc::exec {

struct NodeConfig {
  std::vector<unsigned> gpus;
  std::string gpuBackend = "auto";
  bool rdmaEnabled = true;
  std::string rdmaBackend = "auto";
  HostBackend hostBackend = HostBackend::Real;
  std::string nvmeScheduler;
  bool hugepageAutoAllocate = true;
  std::vector<std::string> allowedUsers, allowedGroups; // as written
  std::vector<uid_t> allowedUids;                       // resolved
  std::vector<gid_t> allowedGids;
  std::string socketGroup;
  std::optional<gid_t> socketGid;
  std::string stateDir;
  // The node's one ledger (executor/claims/NodeClaims.h): every mscale-exec on the node claims what
  // it holds there. Empty: $MSCALE_CLAIMS_DIR, else /run/mscale/claims.
  std::string claimsDir;
  uint64_t maxFrameBytes = 16ull << 20;
  bool strictFingerprint = false;
  std::string logFile;
};

// Parses and resolves user and group names; ERR_EXEC_017 (with YAML carets) on any problem.
std::optional<NodeConfig> parseNodeConfig(llvm::StringRef text, llvm::StringRef name, DiagnosticEngine &diags);
std::optional<NodeConfig> readNodeConfig(llvm::StringRef path, DiagnosticEngine &diags);

} // namespace msc::exec
