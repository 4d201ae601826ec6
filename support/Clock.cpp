#include "support/Clock.h"

#include <ctime>

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

const SystemClock &SystemClock::instance() {
  static const SystemClock clock;
  return clock;
}

} // namespace msc
