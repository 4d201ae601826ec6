// Typed quantities shared by the IR, the plan and the node side. Units are normalised once, in the
// frontend: sizes in bytes, durations in nanoseconds, temperatures in millidegrees Celsius, shares
// in parts per million, bandwidth in bits per second.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace msc {

struct Bytes {
  uint64_t value = 0;
  auto operator<=>(const Bytes &) const = default;
};
struct Nanoseconds {
  uint64_t value = 0;
  auto operator<=>(const Nanoseconds &) const = default;
};
struct MilliCelsius {
  int64_t value = 0;
  auto operator<=>(const MilliCelsius &) const = default;
};
struct PartsPerMillion {
  uint64_t value = 0; // 15% == 150000
  auto operator<=>(const PartsPerMillion &) const = default;
};
struct BitsPerSecond {
  uint64_t value = 0;
  auto operator<=>(const BitsPerSecond &) const = default;
};

// Exact, shortest spelling in the largest unit that divides the value: "2MiB", "10s", "70C".
std::string formatBytes(Bytes b);
std::string formatDuration(Nanoseconds d);
std::string formatTemperature(MilliCelsius t);
std::string formatPercent(PartsPerMillion p);
std::string formatBandwidth(BitsPerSecond b);

} // namespace msc
