#include "slurm/AgentDescriptors.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace msc::slurm {

namespace {

int getDescriptor(int pid, int fd) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0)
    return -1;
  int taken = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  int saved = errno;
  ::close(pidfd);
  errno = saved;
  return taken;
}

} // namespace

int takeAgentDescriptor(const FdHandOver &handOver, std::string &error) {
  std::string path = "/proc/" + std::to_string(handOver.agentPid) + "/fd/" + std::to_string(handOver.agentFd);
  int fd = getDescriptor(handOver.agentPid, handOver.agentFd);
  // Kernels before 5.6 lack pidfd_getfd, and a seccomp filter may refuse it: /proc reopens a memfd.
  if (fd < 0 && (errno == ENOSYS || errno == EPERM))
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot take " + handOver.variable + " from the node agent (" + path + "): " + std::strerror(errno);
    return -1;
  }
  char target[PATH_MAX];
  std::string self = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(self.c_str(), target, sizeof target - 1);
  constexpr std::string_view kAgentMemory = "/memfd:mscale-";
  if (n < 0 || std::string_view(target, static_cast<size_t>(n)).substr(0, kAgentMemory.size()) != kAgentMemory) {
    error = "the node agent's " + path + " for " + handOver.variable + " is not one of its memory files (" +
            (n < 0 ? std::string(std::strerror(errno)) : std::string(target, static_cast<size_t>(n))) + ")";
    ::close(fd);
    return -1;
  }
  // The number may name another file by now (the contract released or resized since the agent
  // answered, the number reused): only the file the agent meant is taken.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_dev != handOver.device || st.st_ino != handOver.inode) {
    error = "the node agent's " + path + " for " + handOver.variable +
            " is no longer the file it handed over (the contract changed since it answered)";
    ::close(fd);
    return -1;
  }
  if (::fcntl(fd, F_SETFD, 0) != 0) { // the task's program is what needs it, after exec
    error = "cannot keep " + handOver.variable + " open across exec: " + std::string(std::strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

} // namespace msc::slurm
