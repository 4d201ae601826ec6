// The recovery log line (executor/RecoveryTimeline.h): every field present, in the documented order,
// each phase the span between its two stamps; a detection the executor cannot know reads "-".
#include "executor/RecoveryTimeline.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace msc::exec;

namespace {

constexpr uint64_t kMs = 1'000'000;

RecoveryTimeline hungWorker() {
  RecoveryTimeline t;
  t.faultClass = "worker-hung";
  t.step = 65;
  t.detectedUnixUs = 1'796'170'000'123'456;
  t.lastGoodNs = 1000 * kMs;
  t.detectedNs = 1600 * kMs;     // detect 600 ms
  t.stoppedNs = 1640 * kMs;      // stop 40
  t.movedNs = 1641 * kMs;        // move 1
  t.startedNs = 1661 * kMs;      // start 20
  t.firstBeatNs = 1700 * kMs;    // boot 39
  t.restoredNs = 1900 * kMs;     // restore 239 (boot included)
  t.firstStepNs = 1905 * kMs;    // first step 5; total 305
  t.heartbeatNs = 200 * kMs;
  t.misses = 3;
  return t;
}

std::vector<std::string> keys(const std::string &fields) {
  std::vector<std::string> out;
  std::istringstream in(fields);
  for (std::string kv; in >> kv;)
    out.push_back(kv.substr(0, kv.find('=')));
  return out;
}

} // namespace

TEST(RecoveryTimeline, FieldsArePresentAndOrdered) {
  std::string fields = formatRecoveryFields(hungWorker());
  EXPECT_EQ(fields, "fault=worker-hung step=65 detected_unix_us=1796170000123456 detect_ms=600.0 stop_ms=40.0 "
                    "move_ms=1.0 start_ms=20.0 boot_ms=39.0 restore_ms=239.0 first_step_ms=5.0 total_ms=305.0 "
                    "heartbeat_ms=200.0 misses=3");
  EXPECT_EQ(keys(fields), (std::vector<std::string>{"fault", "step", "detected_unix_us", "detect_ms", "stop_ms",
                                                    "move_ms", "start_ms", "boot_ms", "restore_ms", "first_step_ms",
                                                    "total_ms", "heartbeat_ms", "misses"}));
}

TEST(RecoveryTimeline, LineKeepsTheSentenceAndAddsTheTimeline) {
  EXPECT_EQ(formatRecoveryLine(hungWorker()),
            "recovered from worker-hung: step 65 done 305.0 ms after the fault was detected; timeline: " +
                formatRecoveryFields(hungWorker()));
}

TEST(RecoveryTimeline, ACrashHasNoKnownDetectionTime) {
  RecoveryTimeline t = hungWorker();
  t.faultClass = "worker-crashed";
  t.lastGoodNs = 0; // the executor learns of a crash from waitpid: when it happened is not its to know
  EXPECT_NE(formatRecoveryFields(t).find(" detect_ms=- stop_ms=40.0 "), std::string::npos);
}

TEST(RecoveryTimeline, MissingOrOutOfOrderStampsReadAsZero) {
  RecoveryTimeline t = hungWorker();
  t.firstBeatNs = 0;               // a worker whose first heartbeat was the restored step
  t.movedNs = t.stoppedNs - kMs;   // clocks never run back, but a wrapped span must not print as centuries
  std::string fields = formatRecoveryFields(t);
  EXPECT_NE(fields.find(" move_ms=0.0 "), std::string::npos);
  EXPECT_NE(fields.find(" boot_ms=0.0 "), std::string::npos);
  EXPECT_NE(fields.find(" total_ms=305.0 "), std::string::npos);
}
