// Killing a worker together with everything it started when the contract has no cgroup to kill
// through (host_backend sim; no cgroup2; kernels before cgroup.kill): data-loader children must not
// outlive their worker and keep its files, pools and control page, whatever the host backend.
#pragma once

#include <sys/types.h>

#include <vector>

namespace msc::exec {

// SIGKILL to `roots` and all their descendants, found by the parent pid of every process in /proc.
// Each one found is stopped first (SIGSTOP), so that none can fork a child the walk has missed;
// the walk is repeated until it finds nothing new, then everything found is killed.
void killProcessTree(const std::vector<pid_t> &roots);

// True while `pid` is on its way out: the kernel is tearing it down (PF_EXITING: after SIGKILL, a
// large address space takes hundreds of milliseconds to free) or it is a zombie not yet reaped.
// Such a process beats no more but is not hung: its exit status is on the way. False when it runs,
// sleeps or is stopped, or when /proc has no such process.
bool processExiting(pid_t pid);

// The living descendants of `root` (children, their children, ...), from /proc; for the tests too.
std::vector<pid_t> processDescendants(pid_t root);

// Sets the scheduling policy (SCHED_IDLE, SCHED_OTHER, ...) and priority of every thread of `pid`
// that /proc lists (Linux schedules threads, and a thread inherits its creator's policy). Returns
// how many threads it set.
unsigned setProcessScheduling(pid_t pid, int policy, int priority);

} // namespace msc::exec
