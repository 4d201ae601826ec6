// Empties the page cache before a cold run of the reader benchmarks: `echo 3 >
// /proc/sys/vm/drop_caches` (root), else posix_fadvise(POSIX_FADV_DONTNEED) on each of `paths`.
// Returns how it was done, for the benchmark's report.
#pragma once

#include <string>
#include <vector>

namespace msc::bench {

std::string dropPageCache(const std::vector<std::string> &paths);

} // namespace msc::bench
