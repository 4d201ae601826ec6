// A borrower's cgroups and the mechanisms that take a loan back, for real:
//   - CPU: its cpuset shrinks to what is still lent (the kernel migrates its tasks off the CPUs taken
//     back before the write returns), or, when nothing is left, it is frozen (cgroup v2 cgroup.freeze,
//     or the v1 freezer), which also stops a process that forks, unlike SIGSTOP; waited for until the
//     kernel reports the cgroup frozen.
//   - Memory: its memory limit is its own (memory.max / memory.limit_in_bytes): it is never given
//     the owner's, and lent memory comes back by ending it (frozen memory is still memory).
//   - Forks: pids.max bounds a fork bomb inside it.
// Under `<mount>/mscale-borrowers/<name>` of each hierarchy used (cgroup2 where it has the
// controller, else the v1 mount), beside the owners' `<mount>/mscale/<contract>`.
#pragma once

#include "executor/host/Cgroups.h"
#include "executor/lending/LoanPlanner.h"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace msc::exec::lending {

// How this node can take CPUs back (the HAL's answer for the node, read from its cgroups).
enum class ReclaimMechanism { CgroupV2, CgroupV1, None };
ReclaimMechanism reclaimMechanism(const CgroupLayout &layout);
const char *mechanismName(ReclaimMechanism m); // "cgroup2 cpuset + cgroup.freeze", ...

struct BorrowerLimits {
  uint64_t memoryBytes = 0; // 0: none of its own
  uint64_t maxPids = 512;   // a fork bomb stops here
};

class BorrowerCgroup {
public:
  // Creates the cgroups, frozen and on no lent CPU yet: nothing of it runs until setCpus() lends
  // it some. nullopt with `error`.
  static std::optional<BorrowerCgroup> create(const CgroupLayout &layout, const std::string &name,
                                              const BorrowerLimits &limits, std::string &error);
  BorrowerCgroup(BorrowerCgroup &&other) noexcept;
  BorrowerCgroup &operator=(BorrowerCgroup &&) = delete;
  ~BorrowerCgroup(); // ends what is left in it and removes its cgroups

  bool join(pid_t pid, std::string &error);
  // Runs it on `cpus` (sorted); empty: frozen. Returns once none of its tasks can run outside them.
  bool setCpus(const CpuSet &cpus, std::string &error);
  const CpuSet &cpus() const { return cpus_; }
  bool frozen() const { return frozen_; }
  // Ends every process in it (thawed first: a frozen task does not die).
  void end();
  std::vector<pid_t> procs() const;
  const std::string &name() const { return name_; }

private:
  BorrowerCgroup() = default;
  bool freeze(bool on, std::string &error);

  ReclaimMechanism mechanism_ = ReclaimMechanism::None;
  std::string name_, cpusetDir_, freezerDir_, memoryDir_, pidsDir_;
  std::vector<std::string> created_; // every directory made, removed in reverse
  CpuSet cpus_;
  bool frozen_ = false;
};

} // namespace msc::exec::lending
