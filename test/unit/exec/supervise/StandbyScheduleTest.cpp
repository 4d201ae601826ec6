// When a warm standby is started, checked and given up on, in virtual time.
#include "executor/supervise/StandbySchedule.h"

#include <gtest/gtest.h>

using namespace msc::exec;

namespace {
constexpr uint64_t kHeartbeat = 200'000'000;
} // namespace

TEST(StandbySchedule, AFailedStandbyIsReplacedAfterTenHeartbeatsPerFailureAndAfterThreeNever) {
  StandbySchedule schedule(kHeartbeat);
  uint64_t now = 5 * kHeartbeat;
  EXPECT_TRUE(schedule.mayStart(now));
  StandbySchedule::Failure f = schedule.failed(now);
  EXPECT_EQ(f.failures, 1u);
  EXPECT_EQ(f.retryInNs, 10 * kHeartbeat);
  EXPECT_FALSE(f.off);
  EXPECT_FALSE(schedule.mayStart(now + 10 * kHeartbeat - 1));
  EXPECT_TRUE(schedule.mayStart(now + 10 * kHeartbeat));
  now += 10 * kHeartbeat;
  f = schedule.failed(now);
  EXPECT_EQ(f.retryInNs, 20 * kHeartbeat);
  EXPECT_TRUE(schedule.mayStart(now + 20 * kHeartbeat));
  now += 20 * kHeartbeat;
  f = schedule.failed(now);
  EXPECT_EQ(f.failures, 3u);
  EXPECT_TRUE(f.off);
  EXPECT_TRUE(schedule.off());
  EXPECT_FALSE(schedule.mayStart(now + 1'000 * kHeartbeat));
}

TEST(StandbySchedule, AStandbyThatBeatBeforeItHadTheJobEndsTheStandbys) {
  StandbySchedule schedule(kHeartbeat);
  schedule.refuse();
  EXPECT_TRUE(schedule.off());
  EXPECT_FALSE(schedule.mayStart(UINT64_MAX));
}

TEST(StandbySchedule, AWaitingStandbyIsCheckedOncePerHeartbeat) {
  StandbySchedule schedule(kHeartbeat);
  schedule.started(0);
  unsigned checks = 0;
  for (uint64_t t = 0; t <= 10 * kHeartbeat; t += kHeartbeat / 10) // the supervisor's tick cadence
    checks += schedule.checkDue(t);
  EXPECT_EQ(checks, 10u);
}
