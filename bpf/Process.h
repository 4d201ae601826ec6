// What mscale-trace reads about processes and cgroups from /proc and the cgroup2 mount: memory
// maps (to find libcuda and to symbolise stacks), cgroup membership, capabilities.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::trace {

struct MapEntry {
  uint64_t start = 0, end = 0, offset = 0;
  bool exec = false;
  std::string path; // empty for anonymous mappings
};

// The mappings of `pid`; empty when the process is gone or unreadable.
std::vector<MapEntry> readMaps(int pid);
// The first mapped file whose basename starts with `prefix` ("libcuda.so"), as a path this process
// can open (through /proc/PID/root when the target lives in another mount namespace).
std::optional<std::string> findMappedLibrary(int pid, llvm::StringRef prefix);
bool processExists(int pid);

// The cgroup v2 mount point ("/sys/fs/cgroup" on unified hosts, "/sys/fs/cgroup/unified" on
// hybrid ones); empty if none is mounted.
std::string cgroup2Mount();
bool isCgroup2Dir(const std::string &path);
// Where the executor puts a contract's processes (support/ContractCgroup.h): <cgroup2 mount>/mscale/<ID>,
// or one level down (<mount>/<slice>/mscale/<ID>) when the executor runs inside a systemd slice.
// Returns the first existing candidate, or the primary candidate when none exists.
std::string contractCgroupPath(llvm::StringRef contractId, const std::string &mount, bool &exists);
// Processes in the cgroup and its descendants.
std::vector<int> cgroupProcesses(const std::string &path);
// The cgroup v2 id (kernfs inode) of a cgroup directory, as bpf_get_current_cgroup_id reports it.
std::optional<uint64_t> cgroupId(const std::string &path);

struct Privileges {
  unsigned uid = 0;
  bool sysAdmin = false, bpf = false, perfmon = false;
  bool canTrace() const { return sysAdmin || (bpf && perfmon); }
};
Privileges currentPrivileges();

} // namespace msc::trace
