// Takes a file descriptor of the node agent into this process: how an attached
// Slurm task gets its control page and the contract's hugepage pools, which a
// process can only inherit from the one that starts it, and slurmstepd (not the
// agent) starts the task. Runs in task_init_privileged, as root, which may take
// a descriptor of any process (pidfd_getfd; on kernels before 5.6, reopening it
// through /proc, which works for the agent's memfds).
#pragma once

#include "slurm/SpankArguments.h"

#include <string>

namespace msc::slurm {

// The new descriptor, kept across exec, or -1 with `error`. Only the agent's
// own memory files
// ("memfd:mscale-...") are taken: an answer naming anything else is refused,
// and nothing is kept.
int takeAgentDescriptor(const FdHandOver &handOver, std::string &error);

} // namespace msc::slurm
