// Runs one of the project's tools for the plugin and collects what it printed. The compiler, the
// protobuf client and LLVM stay out of slurmstepd's address space: a tool that crashes or hangs on a
// bad contract fails the step, never slurmstepd (as pyxis runs enroot). Compiling runs as the job's
// user, so that root never reads a file the user could not.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace msc::slurm {

struct HelperRun {
  std::vector<std::string> argv;   // argv[0]: the tool's absolute path
  bool asUser = false;             // drop to uid/gid (and no supplementary groups) before exec
  uid_t uid = 0;
  gid_t gid = 0;
  unsigned timeoutSeconds = 60;
};

struct HelperResult {
  bool ran = false;     // false: it could not be started, or was killed (see `problem`)
  int exitStatus = -1;  // when ran
  std::string out, err; // stdout, stderr (each kept to the first 4 MiB)
  std::string problem;  // why it did not run to an exit status ("No such file or directory", "killed by signal 9", "timed out after 60 s")
};

HelperResult runHelper(const HelperRun &run);

// Each line of `text` that is not empty.
std::vector<std::string> nonEmptyLines(const std::string &text);

} // namespace msc::slurm
