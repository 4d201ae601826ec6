// Hugepage counts in sysfs: per NUMA node (/sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB)
// or node-less (/sys/kernel/mm/hugepages/hugepages-<kB>kB) when node < 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace msc::exec {

std::string hugepageDir(int node, uint64_t pageSize);
// `file`: nr_hugepages, free_hugepages, surplus_hugepages.
std::optional<uint64_t> readHugepages(int node, uint64_t pageSize, const char *file);
// Raises nr_hugepages by `pages`, reads it back; when the kernel granted fewer, restores the old
// value and says how many it granted.
bool reserveHugepages(int node, uint64_t pageSize, uint64_t pages, std::string &error);
// Lowers nr_hugepages by `pages` (never below 0).
bool unreserveHugepages(int node, uint64_t pageSize, uint64_t pages, std::string &error);

} // namespace msc::exec
