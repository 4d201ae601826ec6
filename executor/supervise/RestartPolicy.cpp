#include "executor/supervise/RestartPolicy.h"

#include "support/Clock.h"

#include <algorithm>

namespace msc::exec {

RestartDecision RestartPolicy::onFault(FaultClass fault, bool steppedOn, uint64_t startedNs, uint64_t now,
                                       std::optional<uint64_t> failedAtStep) {
  RestartDecision d;
  if (!config_.recoverable) {
    d.verdict = RestartVerdict::NoRecoveryPoint;
    return d;
  }
  if (fault == FaultClass::DiskFull) {
    d.verdict = RestartVerdict::DiskFull;
    return d;
  }
  bool programFault = fault == FaultClass::WorkerCrashed || fault == FaultClass::WorkerHung;
  if (programFault && failedAtStep) {
    if (loopFailures_ > 0 && *failedAtStep <= loopStep_) {
      ++loopFailures_;
    } else {
      loopStep_ = *failedAtStep;
      loopFailures_ = 1;
    }
    if (config_.crashLoopAfter && loopFailures_ >= config_.crashLoopAfter) {
      d.verdict = RestartVerdict::CrashLoop;
      d.loopStep = loopStep_;
      d.loopFailures = loopFailures_;
      return d;
    }
  }
  if (restarts_ >= config_.maxRestarts) {
    d.verdict = RestartVerdict::BudgetSpent;
    return d;
  }
  d.restart = ++restarts_;
  bool progressed = steppedOn || (now >= startedNs && now - startedNs >= config_.stableAfterNs);
  withoutProgress_ = progressed ? 0 : withoutProgress_ + 1;
  // The first failure without progress restarts at once (it may be the fault's own aftermath);
  // from the second in a row on, base, 2 x base, 4 x base, ... up to the maximum.
  if (withoutProgress_ >= 2) {
    uint64_t delay = config_.backoffBaseNs;
    for (uint32_t i = 2; i < withoutProgress_ && delay < config_.backoffMaxNs; ++i)
      delay = delay > UINT64_MAX / 2 ? UINT64_MAX : delay * 2;
    d.delayNs = std::min(delay, config_.backoffMaxNs);
  }
  d.notBeforeNs = after(now, d.delayNs);
  return d;
}

} // namespace msc::exec
