#include "executor/rdma/RdmaRetryCounters.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

namespace msc::exec {

namespace {

constexpr const char *kRetryCounters[] = {"local_ack_timeout_err", "rnr_nak_retry_err"};

} // namespace

RdmaRetryReading readRdmaRetries(llvm::StringRef root, llvm::StringRef device, unsigned port) {
  RdmaRetryReading r;
  std::string dev = root.str() + "/sys/class/infiniband/" + device.str();
  if (!llvm::sys::fs::is_directory(dev)) {
    r.unavailableReason = "no RDMA device '" + device.str() + "' on this node (" + dev + ")";
    return r;
  }
  std::string counters = dev + "/ports/" + std::to_string(port) + "/hw_counters";
  for (const char *name : kRetryCounters) {
    auto buf = llvm::MemoryBuffer::getFile(counters + "/" + name, /*IsText=*/true);
    uint64_t v = 0;
    if (!buf || (*buf)->getBuffer().trim().getAsInteger(10, v)) {
      r.unavailableReason = "'" + device.str() + "' port " + std::to_string(port) + " has no readable " +
                            counters + "/" + name + " (a device without mlx5 hardware counters)";
      return r;
    }
    r.total += v;
  }
  r.available = true;
  return r;
}

void RdmaRetryRate::add(Clock::time_point at, uint64_t total) {
  if (!readings_.empty() && total < readings_.back().second)
    readings_.clear();
  readings_.emplace_back(at, total);
  // Keep one reading older than a minute as the window's start, drop the ones before it.
  while (readings_.size() > 2 && at - readings_[1].first >= std::chrono::minutes(1))
    readings_.pop_front();
}

double RdmaRetryRate::perMinute() const {
  if (readings_.size() < 2)
    return -1;
  auto span = std::chrono::duration<double>(readings_.back().first - readings_.front().first).count();
  if (span < 1.0)
    return -1;
  return double(readings_.back().second - readings_.front().second) * 60.0 / span;
}

} // namespace msc::exec
