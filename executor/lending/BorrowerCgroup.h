// A borrower's cgroups and the mechanisms that take a loan back, for real:
//   - CPU: its cpuset shrinks to what is still lent (the kernel migrates its tasks off the CPUs taken
//     back before the write returns), or, when nothing is left, it is frozen (cgroup v2 cgroup.freeze,
//     or the v1 freezer), which also stops a process that forks, unlike SIGSTOP; waited for until the
//     kernel reports the cgroup frozen.
//   - Memory: its memory limit is its own (memory.max / memory.limit_in_bytes): it is never given
//     the owner's, and lent memory comes back by ending it (frozen memory is still memory).
//   - Forks: pids.max bounds a fork bomb inside it.
//   - Priority: it runs SCHED_IDLE (cpu.idle) below every owner thread on a CPU they share.
// Under `<mount>/mscale-borrowers/<name>` of each hierarchy used (cgroup2 where it has the
// controller, else the v1 mount), beside the owners' `<mount>/mscale/<contract>`.
#pragma once

#include "executor/host/Cgroups.h"
#include "executor/lending/LoanPlanner.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

namespace msc::exec::lending {

// How this node can take CPUs back (the HAL's answer for the node, read from its cgroups).
enum class ReclaimMechanism { CgroupV2, CgroupV1, None };
ReclaimMechanism reclaimMechanism(const CgroupLayout &layout);
const char *mechanismName(ReclaimMechanism m); // "cgroup2 cpuset + cgroup.freeze", ...

// What a borrower's IO to a device an owner keeps is held to: enough to make progress, too little to
// disturb the owner's loader.
inline constexpr uint64_t kThrottledBps = 1u << 20;
inline constexpr uint64_t kThrottledIops = 16;

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
  // Runs it on `cpus` (sorted), thawed; returns once none of its tasks can run outside them. Empty:
  // the freeze begins, and settle() says when the kernel has finished it (each task must be
  // scheduled once to freeze, which an owner's thread on the same CPU delays), so that the caller is
  // free meanwhile to move it elsewhere instead (which thaws it).
  bool setCpus(const CpuSet &cpus, std::string &error);
  // Whether the last setCpus() is complete: Done, Pending while a freeze is under way, Failed (with
  // `error`) when it has not completed within the deadline (a task stuck in the kernel).
  enum class Settle { Done, Pending, Failed };
  Settle settle(std::string &error);
  // settle() until it is not Pending; false with `error` when it failed.
  bool waitSettled(std::string &error);
  const CpuSet &cpus() const { return cpus_; }
  // Throttles its IO to `devices` (block device names; a partition stands for its disk, where the
  // kernel throttles) to kThrottledBps and kThrottledIops each way, and lifts the throttle from the
  // devices throttled before and not named now. False with `error` (no io or blkio controller, a
  // device the node does not have): nothing of this call is left half done on a device it failed.
  bool throttleIo(const std::vector<std::string> &devices, std::string &error);
  const std::vector<std::string> &throttled() const { return throttled_; }
  // Its tasks' CPU time so far (cgroup2 cpu.stat usage_usec, v1 cpuacct.usage): what it harvested.
  // nullopt where no hierarchy counts it.
  std::optional<uint64_t> cpuTimeNs() const;
  bool frozen() const { return frozen_; } // asked to be: frozen or freezing
  // Ends every process in it (thawed first: a frozen task does not die).
  void end();
  std::vector<pid_t> procs() const;
  const std::string &name() const { return name_; }

private:
  BorrowerCgroup() = default;
  bool writeFreezer(bool on, std::string &error);
  bool setIdle(bool idle, std::string &error);

  ReclaimMechanism mechanism_ = ReclaimMechanism::None;
  std::string name_, cpusetDir_, freezerDir_, cpuDir_, cpuacctDir_, ioDir_, memoryDir_, pidsDir_;
  std::vector<std::string> throttled_; // devices as named; throttledIds_ as the kernel's MAJ:MIN
  std::vector<std::string> throttledIds_;
  std::vector<std::string> created_; // every directory made, removed in reverse
  CpuSet cpus_;
  bool frozen_ = false;
  bool freezing_ = false; // asked, not yet reported frozen by the kernel
  bool idle_ = false;     // its cgroup runs SCHED_IDLE (or the least weight) now
  std::chrono::steady_clock::time_point freezeAsked_;
};

// The v1 freezer patches the kernel's code (a static key) when the first cgroup of the node starts
// to freeze and when the last thaws: up to 14 ms of a take-back here, each time a lone borrower is
// frozen. An empty cgroup kept frozen for as long as borrowers are lent keeps the key on, so that a
// freeze costs only its own tasks. Nothing on cgroup2, whose freezer has no such key. Each is its
// own (`freezer-kept-on.PID.N`): an agent and a benchmark on one node do not thaw each other's.
class FreezerKeepAlive {
public:
  // Null where there is nothing to keep on (cgroup2, no v1 freezer) or it cannot be made.
  static std::unique_ptr<FreezerKeepAlive> create(const CgroupLayout &layout);
  ~FreezerKeepAlive(); // thaws and removes it
  FreezerKeepAlive(const FreezerKeepAlive &) = delete;
  FreezerKeepAlive &operator=(const FreezerKeepAlive &) = delete;

private:
  FreezerKeepAlive() = default;
  std::string dir_;
  bool created_ = false;
};

} // namespace msc::exec::lending
