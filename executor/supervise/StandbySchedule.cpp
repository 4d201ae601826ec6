#include "executor/supervise/StandbySchedule.h"

#include "support/Clock.h"

namespace msc::exec {

bool StandbySchedule::checkDue(uint64_t now) {
  if (now < nextCheckNs_)
    return false;
  nextCheckNs_ = after(now, heartbeatNs_);
  return true;
}

StandbySchedule::Failure StandbySchedule::failed(uint64_t now) {
  ++failures_;
  uint64_t wait = uint64_t(failures_) * kBackoffHeartbeats * heartbeatNs_;
  retryAtNs_ = after(now, wait);
  off_ = off_ || failures_ >= kMaxFailures;
  return {failures_, wait, off_};
}

} // namespace msc::exec
