#include "support/Clock.h"

#include <cstdio>
#include <ctime>
#include <string>

namespace msc {

uint64_t SystemClock::monotonicNs() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

int64_t SystemClock::unixUs() const {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

std::string formatUtcMs(int64_t unixMs) {
  time_t secs = time_t(unixMs / 1000);
  tm utc;
  gmtime_r(&secs, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", int(unixMs % 1000));
  return std::string(stamp) + ms;
}

const SystemClock &SystemClock::instance() {
  static const SystemClock clock;
  return clock;
}

} // namespace msc
