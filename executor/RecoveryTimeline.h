// One recovery's timeline, from the fault detected to the first step completed after the restart,
// and the log line that reports it: the one place where the split of a recovery is measured
// (the Supervisor stamps it, bench/recovery/recovery_bench.py and the docs read it).
//
// The line keeps the sentence a reader greps for ("recovered from worker-crashed: step 65 done
// 41.2 ms after the fault was detected") and adds the timeline as ordered key=value fields after
// "timeline:", each phase in milliseconds (one decimal):
//   detected_unix_us  wall clock of the detection (tools that inject a fault add their own
//                     detection time from it); the other stamps are the executor's monotonic clock
//   detect_ms         the last good heartbeat of what failed -> detected ("-" where the executor
//                     cannot know when the fault happened: a crash it learns of from waitpid)
//   stop_ms           detected -> every worker of the attempt reaped
//   move_ms           reaped -> what had to move moved (a lost GPU's slices, an RDMA failover)
//   start_ms          moved -> the new worker exec'd (fork, cgroup attach, exec)
//   boot_ms           exec'd -> the worker's first heartbeat (its start-up before or while restoring)
//   restore_ms        exec'd -> the worker reported its snapshot restored (boot_ms included)
//   first_step_ms     restored -> the first step after the restore completed
//   total_ms          detected -> that step (stop + move + start + restore + first_step)
//   heartbeat_ms, misses  the plan's detection budget for hung workers and lost devices
#pragma once

#include <cstdint>
#include <string>

namespace msc::exec {

struct RecoveryTimeline {
  std::string faultClass;   // faultClassName()
  uint64_t step = 0;        // the first step completed after the restore
  int64_t detectedUnixUs = 0;
  // Monotonic nanoseconds; lastGoodNs 0 when unknown (crashes, exits).
  uint64_t lastGoodNs = 0, detectedNs = 0, stoppedNs = 0, movedNs = 0, startedNs = 0, firstBeatNs = 0,
           restoredNs = 0, firstStepNs = 0;
  uint64_t heartbeatNs = 0;
  uint32_t misses = 0;
};

// The key=value fields in the order above, space-separated (no leading "timeline:").
std::string formatRecoveryFields(const RecoveryTimeline &t);
// The whole log message: "recovered from <class>: step N done X ms after the fault was detected;
// timeline: <fields>".
std::string formatRecoveryLine(const RecoveryTimeline &t);

} // namespace msc::exec
