// The time that decisions by time are made on. It is injected so that every such decision
// (a hang, a lost device, a restart's back-off, a lost node's grace) runs in virtual time in the unit
// tests and in the cluster simulator exactly as it runs on a node or a controller.
#pragma once

#include <cstdint>
#include <string>

namespace msc {

class Clock {
public:
  virtual ~Clock() = default;
  // Nanoseconds of a clock that never steps: what durations and deadlines are measured on.
  virtual uint64_t monotonicNs() const = 0;
  // Microseconds since the Unix epoch: what a person reads (history, the detection stamp).
  virtual int64_t unixUs() const = 0;
  int64_t unixMs() const { return unixUs() / 1000; }
};

// CLOCK_MONOTONIC and CLOCK_REALTIME.
class SystemClock final : public Clock {
public:
  uint64_t monotonicNs() const override;
  int64_t unixUs() const override;
  static const SystemClock &instance();
};

// Virtual time: it stands still until it is moved. Wall time follows the monotonic clock from a
// fixed epoch, so that a test's history stamps are reproducible.
class ManualClock final : public Clock {
public:
  explicit ManualClock(uint64_t startNs = 1'000'000'000, int64_t unixUsAtZero = 1'767'225'600'000'000)
      : nowNs_(startNs), unixUsAtZero_(unixUsAtZero) {}
  uint64_t monotonicNs() const override { return nowNs_; }
  int64_t unixUs() const override { return unixUsAtZero_ + int64_t(nowNs_ / 1000); }
  void advance(uint64_t ns) { nowNs_ += ns; }
  void set(uint64_t ns) { nowNs_ = ns; }

private:
  uint64_t nowNs_;
  int64_t unixUsAtZero_;
};

// "2026-12-04T01:02:03.456Z": a wall time as every tool prints it (status, history, events).
std::string formatUtcMs(int64_t unixMs);

// now + delta, saturated: plan durations have no upper bound, and a wrapped sum would put a
// deadline in the past.
inline uint64_t after(uint64_t now, uint64_t delta) { return delta > UINT64_MAX - now ? UINT64_MAX : now + delta; }

} // namespace msc
