#include "slurm/HelperProcess.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace msc::slurm {

namespace {

constexpr size_t kMaxCapture = 4u << 20;

int64_t monotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// The child, between fork and exec: only async-signal-safe calls. On failure it writes errno to
// `report` (close-on-exec, so a successful exec closes it unwritten) and exits.
[[noreturn]] void child(const HelperRun &run, char *const argv[], char *const envp[], int out, int err, int report) {
  auto fail = [&] {
    int e = errno;
    (void)!::write(report, &e, sizeof e);
    ::_exit(127);
  };
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr); // slurmstepd blocks signals the tool must see
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
    fail();
  if (run.asUser && (::setgroups(0, nullptr) != 0 || ::setgid(run.gid) != 0 || ::setuid(run.uid) != 0))
    fail();
  // Nothing of slurmstepd's other descriptors (sockets to srun, job files) reaches the tool.
  if (report > 3)
    ::close_range(3, unsigned(report) - 1, 0);
  ::close_range(unsigned(report) + 1, ~0u, 0);
  ::execve(argv[0], argv, envp);
  int e = errno;
  (void)!::write(report, &e, sizeof e);
  ::_exit(127);
}

// slurmstepd may run with stdin, stdout or stderr closed; a pipe end that landed on 0, 1 or 2 would
// be overwritten by the child's dup2s. Moves such an fd to 3 or above.
bool aboveStdio(int &fd) {
  if (fd > 2)
    return true;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  fd = moved;
  return fd >= 0;
}

bool pipeAboveStdio(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return false;
  if (aboveStdio(fds[0]) && aboveStdio(fds[1]))
    return true;
  int e = errno;
  if (fds[0] >= 0)
    ::close(fds[0]);
  if (fds[1] >= 0)
    ::close(fds[1]);
  errno = e;
  return false;
}

} // namespace

std::vector<std::string> nonEmptyLines(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty())
      lines.push_back(std::move(line));
    if (nl == std::string::npos)
      break;
    start = nl + 1;
  }
  return lines;
}

HelperResult runHelper(const HelperRun &run) {
  HelperResult result;
  if (run.argv.empty()) {
    result.problem = "no command";
    return result;
  }
  // Everything the child needs is built before fork (no allocation after it).
  std::vector<char *> argv;
  for (const std::string &a : run.argv)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  std::string path = "PATH=/usr/bin:/bin", lang = "LC_ALL=C";
  char *envp[] = {path.data(), lang.data(), nullptr};

  int out[2], err[2], report[2];
  if (!pipeAboveStdio(out)) {
    result.problem = std::strerror(errno);
    return result;
  }
  if (!pipeAboveStdio(err)) {
    result.problem = std::strerror(errno);
    ::close(out[0]), ::close(out[1]);
    return result;
  }
  if (!pipeAboveStdio(report)) {
    result.problem = std::strerror(errno);
    ::close(out[0]), ::close(out[1]), ::close(err[0]), ::close(err[1]);
    return result;
  }
  pid_t pid = ::fork();
  if (pid == 0)
    child(run, argv.data(), envp, out[1], err[1], report[1]);
  ::close(out[1]), ::close(err[1]), ::close(report[1]);
  if (pid < 0) {
    result.problem = std::strerror(errno);
    ::close(out[0]), ::close(err[0]), ::close(report[0]);
    return result;
  }

  int64_t deadline = monotonicMs() + int64_t(run.timeoutSeconds) * 1000;
  bool timedOut = false;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string *sinks[2] = {&result.out, &result.err};
  int open = 2;
  while (open > 0) {
    int64_t left = deadline - monotonicMs();
    if (left <= 0) {
      timedOut = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int n = ::poll(fds, 2, int(left));
    if (n < 0 && errno != EINTR) {
      ::kill(pid, SIGKILL); // the wait below must not outlive the timeout
      break;
    }
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents)
        continue;
      char buf[65536];
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (sinks[i]->size() < kMaxCapture)
          sinks[i]->append(buf, size_t(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (pollfd &p : fds)
    if (p.fd >= 0)
      ::close(p.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int execErrno = 0;
  bool execFailed = ::read(report[0], &execErrno, sizeof execErrno) == ssize_t(sizeof execErrno);
  ::close(report[0]);
  if (timedOut)
    result.problem = "timed out after " + std::to_string(run.timeoutSeconds) + " s";
  else if (execFailed)
    result.problem = std::strerror(execErrno);
  else if (WIFSIGNALED(status))
    result.problem = "killed by signal " + std::to_string(WTERMSIG(status));
  else if (WIFEXITED(status)) {
    result.ran = true;
    result.exitStatus = WEXITSTATUS(status);
  } else
    result.problem = "ended with wait status " + std::to_string(status);
  return result;
}

} // namespace msc::slurm
