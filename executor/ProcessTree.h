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

// The living descendants of `root` (children, their children, ...), from /proc; for the tests too.
std::vector<pid_t> processDescendants(pid_t root);

} // namespace msc::exec
