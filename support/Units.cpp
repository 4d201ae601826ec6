#include "support/Units.h"

#include <iterator>

namespace msc {

namespace {
struct Unit {
  const char *suffix;
  uint64_t factor;
};

// The largest unit that divides the value exactly. Binary and decimal size units interleave
// (1000 < 1024 < 10^6 < 2^20 ...), so the table order alone does not decide: 2e9 bytes is 2GB,
// not 1953125KiB. On equal factors the unit listed first wins.
template <size_t N> std::string formatExact(uint64_t value, const Unit (&units)[N]) {
  const Unit *best = &units[N - 1];
  for (const Unit &u : units)
    if (value != 0 && value % u.factor == 0 && u.factor > best->factor)
      best = &u;
  return std::to_string(value / best->factor) + best->suffix;
}
} // namespace

std::string formatBytes(Bytes b) {
  static const Unit units[] = {{"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10},
                               {"TB", 1000000000000ull}, {"GB", 1000000000ull}, {"MB", 1000000ull},
                               {"KB", 1000ull}, {"B", 1}};
  return formatExact(b.value, units);
}

std::string formatDuration(Nanoseconds d) {
  static const Unit units[] = {{"h", 3600000000000ull}, {"min", 60000000000ull}, {"s", 1000000000ull},
                               {"ms", 1000000ull}, {"us", 1000ull}, {"ns", 1}};
  return formatExact(d.value, units);
}

std::string formatBandwidth(BitsPerSecond b) {
  static const Unit units[] = {{"Tbps", 1000000000000ull}, {"Gbps", 1000000000ull}, {"Mbps", 1000000ull},
                               {"Kbps", 1000ull}, {"bps", 1}};
  return formatExact(b.value, units);
}

namespace {
// value / scale as a decimal without trailing zeros: 70500 / 1000 -> "70.5"
std::string decimal(int64_t value, int64_t scale) {
  bool negative = value < 0;
  uint64_t magnitude = negative ? static_cast<uint64_t>(-value) : static_cast<uint64_t>(value);
  uint64_t whole = magnitude / static_cast<uint64_t>(scale);
  uint64_t frac = magnitude % static_cast<uint64_t>(scale);
  std::string out;
  if (negative)
    out.push_back('-');
  out += std::to_string(whole);
  if (frac) {
    std::string digits = std::to_string(frac + static_cast<uint64_t>(scale)).substr(1);
    while (!digits.empty() && digits.back() == '0')
      digits.pop_back();
    out += "." + digits;
  }
  return out;
}
} // namespace

std::string formatTemperature(MilliCelsius t) { return decimal(t.value, 1000) + "C"; }
std::string formatPercent(PartsPerMillion p) { return decimal(static_cast<int64_t>(p.value), 10000) + "%"; }

} // namespace msc
