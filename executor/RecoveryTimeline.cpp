#include "executor/RecoveryTimeline.h"

#include <cinttypes>
#include <cstdio>

namespace msc::exec {

namespace {

std::string millis(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", double(ns) / 1e6);
  return buf;
}

// Phases between stamps taken in order; a stamp missing (0) or out of order reads as 0 ms rather
// than as a wrapped span of centuries.
std::string span(uint64_t from, uint64_t to) { return millis(from && to > from ? to - from : 0); }

} // namespace

std::string formatRecoveryFields(const RecoveryTimeline &t) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%" PRId64, t.detectedUnixUs);
  bool detectKnown = t.lastGoodNs && t.lastGoodNs < t.detectedNs;
  return std::string("fault=") + t.faultClass + " step=" + std::to_string(t.step) + " detected_unix_us=" + stamp +
         " detect_ms=" + (detectKnown ? span(t.lastGoodNs, t.detectedNs) : std::string("-")) +
         " stop_ms=" + span(t.detectedNs, t.stoppedNs) + " move_ms=" + span(t.stoppedNs, t.movedNs) +
         " start_ms=" + span(t.movedNs, t.startedNs) + " boot_ms=" + span(t.startedNs, t.firstBeatNs) +
         " restore_ms=" + span(t.startedNs, t.restoredNs) + " first_step_ms=" + span(t.restoredNs, t.firstStepNs) +
         " total_ms=" + span(t.detectedNs, t.firstStepNs) + " heartbeat_ms=" + millis(t.heartbeatNs) +
         " misses=" + std::to_string(t.misses);
}

std::string formatRecoveryLine(const RecoveryTimeline &t) {
  return "recovered from " + t.faultClass + ": step " + std::to_string(t.step) + " done " +
         span(t.detectedNs, t.firstStepNs) + " ms after the fault was detected; timeline: " + formatRecoveryFields(t);
}

} // namespace msc::exec
