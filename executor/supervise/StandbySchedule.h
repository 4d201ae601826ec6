// When the warm standby (plan fault_tolerance.standby_worker) is started, checked and given up on:
// the timing rules of executor/WarmStandby, kept apart from its processes so that they run in
// virtual time.
//   - A standby is started only while the attempt runs steady (the caller says when), and not
//     before a failed one's back-off is over: 10 heartbeats per failure so far, so that a standby
//     that dies at start-up does not fork in a loop.
//   - After kMaxFailures failures, or once a standby beat before it had the job (the program does
//     not wait in takeOver), no standby is started again.
//   - A waiting standby is checked for staleness once per heartbeat, not on every tick: the check
//     compares the whole worker environment.
#pragma once

#include <cstdint>

namespace msc::exec {

class StandbySchedule {
public:
  static constexpr unsigned kMaxFailures = 3;
  static constexpr unsigned kBackoffHeartbeats = 10;

  explicit StandbySchedule(uint64_t heartbeatNs) : heartbeatNs_(heartbeatNs) {}

  bool off() const { return off_; }
  // A standby may be started at `now` (the attempt being steady is the caller's to know).
  bool mayStart(uint64_t now) const { return !off_ && now >= retryAtNs_; }
  // One was started at `now`: its first check is a heartbeat later.
  void started(uint64_t now) { nextCheckNs_ = now + heartbeatNs_; }
  // Whether a waiting standby is due for its staleness check at `now`; if so the next is a heartbeat on.
  bool checkDue(uint64_t now);

  struct Failure {
    unsigned failures = 0;
    uint64_t retryInNs = 0; // the back-off before the next one
    bool off = false;       // none from now on
  };
  // One ended before it was needed, or could not start, at `now`.
  Failure failed(uint64_t now);
  // One beat before it had the job: none from now on.
  void refuse() { off_ = true; }

private:
  uint64_t heartbeatNs_;
  unsigned failures_ = 0;
  bool off_ = false;
  uint64_t retryAtNs_ = 0, nextCheckNs_ = 0;
};

} // namespace msc::exec
