// RDMA queue pairs behind one interface: `ibverbs` (device, protection domain, completion queue,
// queue pairs with the plan's depths, retry count and timeout) and `sim` where there is no device.
#pragma once

#include "plan/plan.pb.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>

namespace msc::exec {

using QpGroupId = uint64_t;

class RdmaBackend {
public:
  virtual ~RdmaBackend();
  virtual llvm::StringRef name() const = 0; // "ibverbs" or "sim"
  virtual std::optional<QpGroupId> createQueuePairs(const plan::RdmaSetting &setting, std::string &error) = 0;
  virtual void destroyQueuePairs(QpGroupId id) = 0;
  // Port state as the device reports it; false when the port is down.
  virtual bool portActive(QpGroupId id) = 0;
  // Moves the group to the setting's failover port; false when there is none or it is down too.
  virtual bool failover(QpGroupId id, std::string &error) = 0;
  // Makes the group `queuePairs` queue pairs (at least 1) on the port it is on: the newest go
  // first, and new ones are made as the group's first were. False with `error`, the group as it was.
  // How a node lends some of an owner's queue pairs and takes them back (executor/lending).
  virtual bool resizeQueuePairs(QpGroupId id, unsigned queuePairs, std::string &error) = 0;
};

} // namespace msc::exec
