// Where the cgroup controllers are on this node and how a contract's cgroups are laid out.
//
// Layout (spelt by support/ContractCgroup.h, which the tracer reads by too): every contract gets
// `<cgroup2 mount>/mscale/<ID>` (the eBPF tracer and PSI read it), and, for each controller the
// executor uses (cpuset, io/blkio) that is not on v2, `<v1 mount>/mscale/<ID>`.
// On a hybrid host (cgroup2 at /sys/fs/cgroup/unified, controllers on v1) the worker is in both.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace msc::exec {

struct CgroupLayout {
  std::string v2Mount;                         // empty when no cgroup2 is mounted
  std::set<std::string> v2Controllers;         // cgroup.controllers of the v2 root
  std::map<std::string, std::string> v1Mounts; // controller ("cpuset", "blkio") -> mount point

  // Reads /proc/self/mountinfo and the v2 root's cgroup.controllers.
  static CgroupLayout discover();
  bool onV2(llvm::StringRef controller) const { return v2Controllers.count(controller.str()) != 0; }
  // `<mount>/mscale/<contract>` of the hierarchy that has `controller` (v2 first), or of cgroup2 when
  // `controller` is empty; nullopt when the controller is nowhere.
  std::optional<std::string> dirFor(llvm::StringRef controller, llvm::StringRef contract) const;
  std::string v2Dir(llvm::StringRef contract) const;
  std::string describe() const; // "cgroup2 at X (controllers: ...); v1: cpuset at Y, ..."
};

// A cgroup directory this process created, removed again by remove(). `created` is false when it
// already existed (then remove() leaves it alone unless `force`).
struct CgroupDir {
  std::string path;
  bool created = false;
};

// mkdir -p for the parent "mscale" directory and the contract directory. For v1 cpuset, a new
// directory inherits the parent's cpus and mems (cpuset.cpus/mems must be set before tasks join).
bool createCgroup(const std::string &path, bool cpusetV1, CgroupDir &out, std::string &error);
// Moves `pid` into the cgroup (cgroup.procs).
bool joinCgroup(const std::string &path, pid_t pid, std::string &error);
// Kills every process left in the cgroup (cgroup.kill on v2, SIGKILL per pid on v1), waits for it
// to empty (up to ~2 s), then rmdirs it. False with `error` when it could not be removed.
bool removeCgroup(const std::string &path, std::string &error);
std::vector<pid_t> cgroupProcs(const std::string &path);

} // namespace msc::exec
