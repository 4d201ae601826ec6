// control-page-run: runs a worker with a control page of its own, as mscale-exec gives it one, but
// without the executor: the lit tests of what a worker does with its page (a planned stop) run it.
//   control-page-run [--stop-after S] -- PROGRAM ARGS...
// Asks the worker on the page to stop after step S (ControlPageHost::requestStopAfter; none: nothing
// asked), runs PROGRAM with MSCALE_CONTROL_FD set, and once it has exited prints what the page says:
//   control-page: exit N | signal N
//   control-page: step N          the last step the worker reported
//   control-page: stopped at N    stoppedAtStep (0: it did not stop)
//   control-page: finishing N
// Exits with the worker's status (128 + N for a signal), so that a RUN line fails when the worker does.
#include "worker/ControlPage.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  uint64_t stopAfter = 0;
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    char *end = nullptr;
    if (std::strcmp(argv[i], "--stop-after") == 0 && i + 1 < argc && (stopAfter = std::strtoull(argv[++i], &end, 10), !*end))
      continue;
    std::fprintf(stderr, "usage: control-page-run [--stop-after S] -- PROGRAM ARGS...\n");
    return 2;
  }
  if (i + 1 >= argc) {
    std::fprintf(stderr, "usage: control-page-run [--stop-after S] -- PROGRAM ARGS...\n");
    return 2;
  }
  std::string error;
  std::unique_ptr<msc::worker::ControlPageHost> page = msc::worker::ControlPageHost::create(error);
  if (!page) {
    std::fprintf(stderr, "control-page-run: %s\n", error.c_str());
    return 1;
  }
  page->requestStopAfter(stopAfter);
  std::fflush(stdout);
  pid_t child = ::fork();
  if (child == 0) {
    ::fcntl(page->fd(), F_SETFD, 0); // the host's fd is close-on-exec; the worker inherits this one
    ::setenv("MSCALE_CONTROL_FD", std::to_string(page->fd()).c_str(), 1);
    ::execvp(argv[i + 1], argv + i + 1);
    std::fprintf(stderr, "control-page-run: cannot run '%s': %s\n", argv[i + 1], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (WIFEXITED(status))
    std::printf("control-page: exit %d\n", rc);
  else
    std::printf("control-page: signal %d\n", WTERMSIG(status));
  std::printf("control-page: step %llu\n", static_cast<unsigned long long>(page->step()));
  std::printf("control-page: stopped at %llu\n", static_cast<unsigned long long>(page->stoppedAt()));
  std::printf("control-page: finishing %d\n", page->finishing() ? 1 : 0);
  return rc;
}
