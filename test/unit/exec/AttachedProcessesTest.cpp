// The agent's watch over processes it did not start (AttachedProcesses.h), on
// plain child processes and a moved clock: the descriptors handed over, beats
// seen, silence killed, ends noticed.
#include "executor/agent/AttachedProcesses.h"
#include "worker/WorkerApi.h"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace msc::exec;

namespace {

constexpr uint64_t kMs = 1'000'000;

msc::plan::FaultTolerance fastHeartbeat() {
  msc::plan::FaultTolerance ft;
  ft.set_heartbeat_ns(100 * kMs);
  ft.set_heartbeat_misses(3);
  return ft;
}

pid_t sleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// The page behind a handed descriptor, as the attached process maps it.
mscale::worker::ControlPage *map(int fd) {
  void *p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<mscale::worker::ControlPage *>(p);
}

bool waitGone(AttachedProcesses &attached, uint64_t now) {
  for (int i = 0; i < 500 && !attached.processes().empty(); ++i) {
    attached.tick(now);
    ::usleep(2000);
  }
  return attached.processes().empty();
}

} // namespace

TEST(AttachedProcesses, SilenceAfterABeatIsKilled) {
  AttachedProcesses attached(fastHeartbeat());
  EXPECT_EQ(attached.hangAfterNs(), 300 * kMs);
  pid_t child = sleeper();
  std::string error;
  auto fds = attached.attach(child, 0, error);
  ASSERT_TRUE(fds) << error;
  ASSERT_EQ(fds->size(), 1u);
  EXPECT_EQ((*fds)[0].variable, "MSCALE_CONTROL_FD");
  mscale::worker::ControlPage *page = map((*fds)[0].agentFd);
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->magic, mscale::worker::ControlPage::kMagic);

  EXPECT_TRUE(attached.tick(10'000 * kMs).empty()) << "silence before the first beat is start-up";
  page->step.store(41);
  page->beats.fetch_add(1);
  EXPECT_TRUE(attached.tick(10'000 * kMs).empty());
  EXPECT_TRUE(attached.tick(10'299 * kMs).empty());
  std::vector<AttachedProcesses::Event> events = attached.tick(10'300 * kMs);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].hung);
  EXPECT_EQ(events[0].pid, child);
  EXPECT_NE(events[0].text.find("no heartbeat for 300.0 ms (3 heartbeats 100.0 "
                                "ms apart) after step 41"),
            std::string::npos)
      << events[0].text;
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(attached.tick(10'400 * kMs).empty()) << "a killed process is forgotten without a second event";
  EXPECT_TRUE(attached.processes().empty());
  ::munmap(page, 4096);
}

TEST(AttachedProcesses, AFinishingProcessHasTheExitGrace) {
  AttachedProcesses attached(fastHeartbeat());
  pid_t child = sleeper();
  std::string error;
  auto fds = attached.attach(child, 0, error);
  ASSERT_TRUE(fds) << error;
  mscale::worker::ControlPage *page = map((*fds)[0].agentFd);
  page->beats.fetch_add(1);
  page->finishing.store(1);
  attached.tick(0);
  EXPECT_TRUE(attached.tick(10'000 * kMs).empty()) << "finishing: 30 s, not 300 ms";
  ::kill(child, SIGTERM);
  ::waitpid(child, nullptr, 0);
  std::vector<AttachedProcesses::Event> events;
  for (int i = 0; i < 500 && events.empty(); ++i, ::usleep(2000))
    events = attached.tick(10'000 * kMs);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].hung);
  EXPECT_NE(events[0].text.find("ended at step 0"), std::string::npos) << events[0].text;
  EXPECT_TRUE(waitGone(attached, 10'000 * kMs));
  ::munmap(page, 4096);
}

TEST(AttachedProcesses, AttachingAgainGivesANewPage) {
  AttachedProcesses attached(fastHeartbeat());
  pid_t child = sleeper();
  std::string error;
  auto first = attached.attach(child, 0, error);
  auto second = attached.attach(child, 0, error);
  ASSERT_TRUE(first && second) << error;
  EXPECT_EQ(attached.processes().size(), 1u);
  EXPECT_EQ(attached.processes()[0].control->fd(), (*second)[0].agentFd);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(waitGone(attached, 0));
}

TEST(AttachedProcesses, NoSuchProcess) {
  AttachedProcesses attached(fastHeartbeat());
  pid_t child = sleeper();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::string error;
  EXPECT_FALSE(attached.attach(child, 0, error));
  EXPECT_EQ(error, "pidfd_open: No such process");
}
