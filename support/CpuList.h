// CPU lists as the kernel writes them ("0-3,8,10-11"): sysfs and cpuset files, isolcpus= and
// nohz_full=, the executor's MSCALE_ROLE_<ROLE>_CPUS; read and written by one set of rules.
#pragma once

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Header only and free of LLVM: the worker runtime (WorkerApi.h, which a worker includes without
// linking anything of ours) reads lists by the same rules that hal and the executor use.
namespace msc {

namespace detail {
inline std::string_view trimCpuList(std::string_view s) {
  constexpr std::string_view blank = " \t\n\v\f\r";
  size_t first = s.find_first_not_of(blank);
  return first == std::string_view::npos ? std::string_view() : s.substr(first, s.find_last_not_of(blank) - first + 1);
}
inline bool cpuNumber(std::string_view s, unsigned &out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}
} // namespace detail

// The CPUs of `text`, sorted and without duplicates; empty for an empty list. nullopt (and `why`)
// when a part is not a number or a range, or a range is reversed or larger than 2^20.
inline std::optional<std::vector<unsigned>> parseCpuList(std::string_view text, std::string *why = nullptr) {
  std::vector<unsigned> out;
  text = detail::trimCpuList(text);
  if (text.empty())
    return out;
  for (;;) {
    size_t comma = text.find(',');
    std::string_view part = detail::trimCpuList(text.substr(0, comma));
    size_t dash = part.find('-');
    unsigned a = 0, b = 0;
    if (!detail::cpuNumber(part.substr(0, dash), a) ||
        (dash != std::string_view::npos && !detail::cpuNumber(part.substr(dash + 1), b))) {
      if (why)
        *why = "'" + std::string(part) + "' is not a number or range";
      return std::nullopt;
    }
    if (dash == std::string_view::npos)
      b = a;
    if (b < a || b - a > (1u << 20)) {
      if (why)
        *why = "range '" + std::string(part) + "' is reversed or too large";
      return std::nullopt;
    }
    for (unsigned c = a;; ++c) { // not `c <= b`: b may be the largest unsigned
      out.push_back(c);
      if (c == b)
        break;
    }
    if (comma == std::string_view::npos)
      break;
    text.remove_prefix(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The shortest list of `cpus` (sorted): runs as ranges, "0-3,8,10-11".
inline std::string formatCpuList(const std::vector<unsigned> &cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    if (!out.empty())
      out += ',';
    out += std::to_string(cpus[i]);
    if (j > i)
      out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

} // namespace msc
