// Worker start through the gate (executor/Session.h spawnGated): the exec is awaited, so that a
// program that cannot run is the caller's error, except for a child the gate may leave frozen (a
// borrower's): then the call returns at once, and the failed exec is the child's status 127 with
// its reason where its output goes.
#include "executor/Session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace msc::exec {
namespace {

TEST(SpawnGated, AProgramThatCannotRunIsTheCallersErrorWhenTheExecIsAwaited) {
  std::string error;
  pid_t pid = spawnGated({"/nonexistent/worker"}, {}, [](pid_t) { return true; }, error);
  EXPECT_EQ(pid, -1);
  EXPECT_EQ(error, "No such file or directory");
}

TEST(SpawnGated, AChildLeftStoppedInTheGateDoesNotHoldTheCaller) {
  // The gate stops the child before it execs, as a borrower's frozen cgroup does.
  std::string error;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = spawnGated({"/bin/true"}, {}, [](pid_t child) { return ::kill(child, SIGSTOP) == 0; }, error,
                         /*awaitExec=*/false);
  ASSERT_GT(pid, 0) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WUNTRACED), pid);
  EXPECT_TRUE(WIFSTOPPED(status)) << "the child is still in its gate";
  ::kill(pid, SIGCONT); // lent: it execs and ends
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(SpawnGated, WithoutAwaitingAFailedExecIsStatus127WithItsReasonOnStderr) {
  char path[] = "/tmp/msc-spawn-gated-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  WorkerEnvironment env;
  env.stdioFd = fd;
  std::string error;
  pid_t pid = spawnGated({"/nonexistent/worker"}, env, [](pid_t) { return true; }, error, /*awaitExec=*/false);
  ASSERT_GT(pid, 0) << error;
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 127) << status;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "mscale-exec: cannot run /nonexistent/worker: No such file or directory\n");
  ::close(fd);
  ::unlink(path);
}

} // namespace
} // namespace msc::exec
