// Turns user return addresses into function names through /proc/PID/maps and the ELF symbol
// tables of the mapped files. Maps are snapshotted when a process is first seen, so stacks of
// processes that have exited since can still be named.
#pragma once

#include "bpf/ElfFile.h"
#include "bpf/Process.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msc::trace {

class Symbolizer {
public:
  // Reads the maps of `pid` unless already known.
  void snapshot(int pid);
  // The name of the function holding `addr` in `pid`: "train_step", else "libfoo.so+0x1a2b", else
  // "[unknown]". Return addresses point after the call, so they are looked up at addr - 1.
  std::string frame(int pid, uint64_t addr, bool returnAddress = true);

private:
  const MapEntry *findMapping(int pid, uint64_t addr);
  const ElfFile *elf(const std::string &path, int pid);
  std::map<int, std::vector<MapEntry>> maps_;
  std::map<std::string, std::unique_ptr<ElfFile>> elfs_; // nullptr: could not be read
};

} // namespace msc::trace
