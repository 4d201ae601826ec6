// The RDMA applier: queue pairs for every plan.rdma() setting, all or nothing. A group whose port
// is down is moved to the setting's failover port (WRN_RDMA_001) or the apply fails (ERR_RDMA_005).
// Worker environment: MSCALE_RDMA_BACKEND=ibverbs|sim and
// MSCALE_RDMA=<role>@<device>:<port>:<queue pairs>:<max outstanding>;...
#pragma once

#include "executor/core/Applier.h"
#include "executor/rdma/RdmaBackend.h"

#include <memory>

namespace msc::exec {

struct AppliedQpGroup {
  int planIndex = 0;
  std::string role;
  QpGroupId id = 0;
  std::string device; // where the group ended up (the failover port after a failover)
  unsigned port = 0;
};

std::unique_ptr<Applier> createRdmaApplier(RdmaBackend &backend, LogSink log = {});
const std::vector<AppliedQpGroup> *appliedQpGroups(const Applier &applier);
// Fault recovery: moves every group whose port is down to its setting's failover port and refreshes
// the worker environment (MSCALE_RDMA). `moved` says what moved; false with `error` when a group
// cannot move (no failover port, or it is down too).
bool failOverDownPorts(Applier &rdmaApplier, ApplyContext &ctx, std::vector<std::string> &moved, std::string &error);

} // namespace msc::exec
