// How a diagnostic's message is made from its table row: "%0".."%9" in the row's format are the
// arguments in order (one that was not given is left out). The one formatter of every diagnostics
// table, header-only and free of LLVM, so that what links nothing of ours (the worker's snapshot
// library, the Slurm plugin) fills its messages exactly as the compiler does.
#pragma once

#include <string>
#include <string_view>

namespace msc {

// `args`: any indexable container of things a std::string_view is made from.
template <typename Args> std::string fillDiagFormat(std::string_view format, const Args &args) {
  std::string out;
  out.reserve(format.size() + 32);
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '%' && i + 1 < format.size() && format[i + 1] >= '0' && format[i + 1] <= '9') {
      size_t index = static_cast<size_t>(format[i + 1] - '0');
      if (index < std::size(args))
        out += std::string_view(args[index]);
      ++i;
      continue;
    }
    out += c;
  }
  return out;
}

} // namespace msc
