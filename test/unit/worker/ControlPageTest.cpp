// The planned stop on the control page (a drain), from both sides: the executor's ControlPageHost asks
// and reads back; the worker's functions (WorkerApi.h) run in a child that inherits the page, as a
// worker does, because a process finds its page once.
#include "worker/ControlPage.h"
#include "worker/WorkerApi.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace {

using msc::worker::ControlPageHost;

std::unique_ptr<ControlPageHost> newPage() {
  std::string error;
  std::unique_ptr<ControlPageHost> page = ControlPageHost::create(error);
  EXPECT_TRUE(page) << error;
  return page;
}

// Runs `worker` in a child with MSCALE_CONTROL_FD naming `fd` (-1: no page); its exit status: the
// number of the first failed check, or 0.
int inWorker(int fd, const std::function<int()> &worker) {
  pid_t child = ::fork();
  if (child == 0) {
    if (fd >= 0)
      ::setenv("MSCALE_CONTROL_FD", std::to_string(fd).c_str(), 1);
    else
      ::unsetenv("MSCALE_CONTROL_FD");
    ::_exit(worker());
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + status;
}

TEST(ControlPageStop, TheWorkerStopsAfterExactlyTheStepAsked) {
  auto host = newPage();
  ASSERT_TRUE(host);
  EXPECT_EQ(host->stopRequestedAfter(), 0u);
  EXPECT_EQ(host->stoppedAt(), 0u);
  host->requestStopAfter(40);
  EXPECT_EQ(host->stopRequestedAfter(), 40u);
  int failed = inWorker(host->fd(), [] {
    namespace w = mscale::worker;
    if (w::stopRequested() != 40)
      return 1;
    if (w::stopAfter(39) || w::stopAfter(41)) // not yet; passed already (the worker runs on)
      return 2;
    if (!w::stopAfter(40))
      return 3;
    w::stoppedAt(40);
    return 0;
  });
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(host->stoppedAt(), 40u);
  EXPECT_TRUE(host->finishing()) << "a stopped worker is exiting: silence is not a hang";
}

TEST(ControlPageStop, WithdrawnOrNeverAskedIsNoStop) {
  auto host = newPage();
  ASSERT_TRUE(host);
  host->requestStopAfter(7);
  host->requestStopAfter(0);
  EXPECT_EQ(host->stopRequestedAfter(), 0u);
  // Step 0 is no step: a worker that has completed none is never told to stop by a zeroed page.
  EXPECT_EQ(inWorker(host->fd(), [] { return mscale::worker::stopAfter(0) || mscale::worker::stopRequested() ? 1 : 0; }), 0);
  // Without a page (not under mscale-exec) nothing is asked and saying a stop is a no-op.
  EXPECT_EQ(inWorker(-1, [] {
              mscale::worker::stoppedAt(3);
              return mscale::worker::stopRequested() || mscale::worker::stopAfter(3) ? 1 : 0;
            }),
            0);
}

TEST(ControlPageStop, ANewWorkerStartsWithNoRequestAndAContinuingPageTakesNone) {
  auto host = newPage();
  ASSERT_TRUE(host);
  host->requestStopAfter(20);
  host->page()->stoppedAtStep.store(20);
  host->page()->step.store(20);

  auto next = newPage(); // the next placement's page goes on from this one's step, not its stop
  ASSERT_TRUE(next);
  next->continueFrom(*host);
  EXPECT_EQ(next->step(), 20u);
  EXPECT_EQ(next->stopRequestedAfter(), 0u);
  EXPECT_EQ(next->stoppedAt(), 0u);

  host->resetForNewWorker();
  EXPECT_EQ(host->stopRequestedAfter(), 0u);
  EXPECT_EQ(host->stoppedAt(), 0u);
}

} // namespace
