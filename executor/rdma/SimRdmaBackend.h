// The `sim` RDMA backend: devices and ports with a state the tests (and other processes, through
// the sim control file) set up and down. Queue-pair groups record what ibverbs would have been
// asked for, so tests can check depths, retry count and the timeout exponent.
#pragma once

#include "executor/rdma/RdmaBackend.h"
#include "executor/SimControlFile.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

struct SimRdmaPort {
  std::string device;
  unsigned port = 1;
  bool active = true;
  std::string linkLayer = "InfiniBand";
};

struct SimQpGroup {
  std::string device;
  unsigned port = 0;
  unsigned queuePairs = 0;
  unsigned maxSendWr = 0;
  uint8_t retryCount = 0;
  uint8_t timeoutExponent = 0;
  std::string failoverDevice;
  unsigned failoverPort = 0;
  bool failedOver = false;
};

class SimRdmaBackend final : public RdmaBackend {
public:
  // With no ports every device/port a plan names exists and is up.
  explicit SimRdmaBackend(std::vector<SimRdmaPort> ports = {}, std::string controlFile = {});

  llvm::StringRef name() const override { return "sim"; }
  std::optional<QpGroupId> createQueuePairs(const plan::RdmaSetting &setting, std::string &error) override;
  void destroyQueuePairs(QpGroupId id) override;
  bool portActive(QpGroupId id) override;
  bool failover(QpGroupId id, std::string &error) override;
  bool resizeQueuePairs(QpGroupId id, unsigned queuePairs, std::string &error) override;

  // Sets a port up or down (creating it when the backend accepts any port).
  void setPortState(const std::string &device, unsigned port, bool active);
  // Makes the next createQueuePairs fail (roll-back tests).
  void failNextCreate(std::string why) { std::lock_guard l(mu_); failNext_ = std::move(why); }
  std::optional<SimQpGroup> group(QpGroupId id) const;
  size_t liveGroups() const;

private:
  SimRdmaPort *find(const std::string &device, unsigned port);
  void pollControlFile();

  mutable std::mutex mu_;
  bool strict_;
  std::vector<SimRdmaPort> ports_;
  std::map<QpGroupId, SimQpGroup> groups_;
  QpGroupId next_ = 1;
  std::string failNext_;
  SimControlFile control_;
};

} // namespace msc::exec
