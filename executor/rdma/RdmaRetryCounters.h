// Retries on an RDMA port, from the device's hardware counters in sysfs, for `contract status` and
// the agent's metrics. mlx5 devices count in ports/N/hw_counters/: local_ack_timeout_err (an ack
// timer expired and the sender retransmitted) and rnr_nak_retry_err (a receiver-not-ready NAK the
// sender retried after); their sum is the port's retries. A device without them says so: the value
// is unavailable, never zero.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

namespace msc::exec {

struct RdmaRetryReading {
  bool available = false;
  std::string unavailableReason;
  uint64_t total = 0;
};

// Reads <root>/sys/class/infiniband/<device>/ports/<port>/hw_counters/ (root "" is the live machine).
RdmaRetryReading readRdmaRetries(llvm::StringRef root, llvm::StringRef device, unsigned port);

// Retries per minute from readings taken whenever someone asks (status requests, metric scrapes):
// the rate between the oldest reading of the last minute and the newest. A counter that went back
// (a device reset) starts the window again.
class RdmaRetryRate {
public:
  using Clock = std::chrono::steady_clock;
  void add(Clock::time_point at, uint64_t total);
  // -1 until two readings at least a second apart exist.
  double perMinute() const;

private:
  std::deque<std::pair<Clock::time_point, uint64_t>> readings_;
};

} // namespace msc::exec
