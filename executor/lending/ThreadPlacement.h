// Where a process tree's threads are, read from /proc by an observer that trusts neither the lender
// nor its cgroups: the tree is found by parent pids, each thread's state and the CPU it is queued on
// by its stat, its allowed CPUs by its status. The guarantee "no borrower thread is runnable on the
// owner's exclusive CPUs" is checked with this, from the borrower's side.
#pragma once

#include "executor/lending/LoanPlanner.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace msc::exec::lending {

struct ThreadSeen {
  pid_t pid = 0, tid = 0;
  char state = '?';    // R running or runnable, S, D, T, Z, ...
  int cpu = -1;        // the CPU it last ran on or is queued on (stat field 39)
  CpuSet allowed;      // Cpus_allowed_list
};

// `root` and every process descended from it, by /proc/<pid>/stat's parent pid; empty when `root`
// is gone.
std::vector<pid_t> processTree(pid_t root);
std::vector<ThreadSeen> threadsOf(const std::vector<pid_t> &pids);
// The threads of `seen` that could run on one of `cpus` now: runnable there, or runnable and allowed
// there. Empty when the loan is back.
std::vector<ThreadSeen> runnableOn(const std::vector<ThreadSeen> &seen, const CpuSet &cpus);

} // namespace msc::exec::lending
