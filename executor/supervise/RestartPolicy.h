// Whether a failed attempt is restarted, and when: kubelet's restart policy with its back-off.
//   - A plan without a recovery point is never restarted (there is nothing to resume from).
//   - A full disk is never restarted: the next snapshot write would find it full again.
//   - Otherwise the job is restarted until `maxRestarts` restarts are spent.
//   - An attempt that failed after it made progress (completed a step past the one it resumed
//     from, or ran for `stableAfterNs`: a worker without a control page says no step) is restarted
//     at once: recovery time is what the job pays for. Attempts that fail again and again without
//     progress are restarted after a back-off that doubles from `backoffBaseNs` up to
//     `backoffMaxNs`, so that a worker that dies at start-up does not fork in a loop; progress
//     resets it.
//   - A crash loop is not restarted: `crashLoopAfter` program faults in a row (a crash or a hang,
//     not a device's) at the same step, none getting past the step the one before failed at.
//     Progress up to the step does not break it: a script that raises at step 30 resumes from
//     step 20 and fails at 30 again, every time. Device faults neither count nor break it, nor
//     does a lost peer (exit 75): a rank whose collective broke because another rank's process
//     ended is not failing on its own, and a job whose ranks restart one after another must not be
//     judged a crash loop on the ranks that only lost them.
// Pure: fed the fault, the clock and whether the attempt progressed; the supervisor acts.
#pragma once

#include "executor/supervise/Fault.h"
#include "ir/FieldDefaults.h"

#include <cstdint>
#include <optional>
#include <string>

namespace msc::exec {

struct RestartPolicyConfig {
  bool recoverable = false;        // the plan has a recovery point (snapshots)
  uint32_t maxRestarts = 10;
  uint64_t backoffBaseNs = uint64_t(ir::defaults::fault_tolerance::heartbeat); // one heartbeat
  uint64_t backoffMaxNs = 5'000'000'000;
  uint64_t stableAfterNs = 60'000'000'000;
  uint32_t crashLoopAfter = 3; // 0: never judged a crash loop
};

enum class RestartVerdict { Restart, NoRecoveryPoint, DiskFull, BudgetSpent, CrashLoop };

struct RestartDecision {
  RestartVerdict verdict = RestartVerdict::Restart;
  uint32_t restart = 0;    // Restart: which restart this is (1 for the first)
  uint64_t delayNs = 0;    // Restart: the back-off before it (0: at once)
  uint64_t notBeforeNs = 0;
  uint64_t loopStep = 0;   // CrashLoop: the step every attempt failed at
  uint32_t loopFailures = 0; // CrashLoop: how many attempts in a row did
  bool restarts() const { return verdict == RestartVerdict::Restart; }
};

class RestartPolicy {
public:
  explicit RestartPolicy(RestartPolicyConfig config) : config_(config) {}

  // An attempt started at `startedNs` failed with `fault` at `now`; `steppedOn`: it completed a
  // step past the one it started from; `failedAtStep`: the step it had reached (nullopt: it reported
  // none, e.g. it died before its first). A Restart counts against the budget.
  RestartDecision onFault(FaultClass fault, bool steppedOn, uint64_t startedNs, uint64_t now,
                          std::optional<uint64_t> failedAtStep = std::nullopt);

  uint32_t restarts() const { return restarts_; }
  uint32_t failuresWithoutProgress() const { return withoutProgress_; }
  // A restart is left in the budget (a warm standby is worth starting).
  bool budgetLeft() const { return config_.recoverable && restarts_ < config_.maxRestarts; }
  const RestartPolicyConfig &config() const { return config_; }

private:
  RestartPolicyConfig config_;
  uint32_t restarts_ = 0;
  uint32_t withoutProgress_ = 0; // restarts in a row after attempts that made no progress
  uint64_t loopStep_ = 0;        // the furthest step a program fault of the current run happened at
  uint32_t loopFailures_ = 0;    // program faults in a row that got no further than loopStep_
};

} // namespace msc::exec
