// Taking a descriptor of another process (the node agent) into this one: here
// this process plays the agent, which pidfd_getfd allows (a process may trace
// itself).
#include "slurm/AgentDescriptors.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace msc::slurm;

namespace {

// What the agent's answer says of its descriptor `fd`: its number and the file it names.
FdHandOver handOver(const char *variable, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return {variable, ::getpid(), fd, 0, 0};
  return {variable, ::getpid(), fd, st.st_dev, st.st_ino};
}

} // namespace

TEST(AgentDescriptors, TakesTheAgentsMemoryFileAndKeepsItAcrossExec) {
  int agentFd = ::memfd_create("mscale-control", MFD_CLOEXEC);
  ASSERT_GE(agentFd, 0);
  ASSERT_EQ(::write(agentFd, "beat", 4), 4);
  std::string error;
  int fd = takeAgentDescriptor(handOver("MSCALE_CONTROL_FD", agentFd), error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_NE(fd, agentFd);
  EXPECT_EQ(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  char buf[4];
  EXPECT_EQ(::pread(fd, buf, 4, 0), 4); // the same file
  EXPECT_EQ(std::string(buf, 4), "beat");
  ::close(fd);
  ::close(agentFd);
}

TEST(AgentDescriptors, RefusesWhatIsNotTheAgentsMemory) {
  int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int foreign = ::memfd_create("someone-else", MFD_CLOEXEC);
  ASSERT_GE(other, 0);
  std::string error;
  EXPECT_EQ(takeAgentDescriptor(handOver("MSCALE_CONTROL_FD", other), error), -1);
  EXPECT_EQ(error, "the node agent's /proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(other) +
                       " for MSCALE_CONTROL_FD is not one of its memory files (/dev/null)");
  EXPECT_EQ(takeAgentDescriptor(handOver("MSCALE_POOL_DATA_FD", foreign), error), -1);
  EXPECT_NE(error.find("(/memfd:someone-else (deleted))"), std::string::npos) << error;
  ::close(other);
  ::close(foreign);
}

TEST(AgentDescriptors, ANumberReusedSinceTheAnswerIsRefused) {
  int handed = ::memfd_create("mscale-control", MFD_CLOEXEC);
  FdHandOver answer = handOver("MSCALE_CONTROL_FD", handed);
  // The contract is released and another one's control page gets the same number.
  ::close(handed);
  int reused = ::memfd_create("mscale-control", MFD_CLOEXEC);
  ASSERT_EQ(reused, handed);
  std::string error;
  EXPECT_EQ(takeAgentDescriptor(answer, error), -1);
  EXPECT_EQ(error, "the node agent's /proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(handed) +
                       " for MSCALE_CONTROL_FD is no longer the file it handed over (the contract changed since it "
                       "answered)");
  ::close(reused);
}

TEST(AgentDescriptors, ANumberTheAgentDoesNotHold) {
  std::string error;
  EXPECT_EQ(takeAgentDescriptor({"MSCALE_CONTROL_FD", ::getpid(), 999999}, error), -1);
  EXPECT_EQ(error, "cannot take MSCALE_CONTROL_FD from the node agent (/proc/" + std::to_string(::getpid()) +
                       "/fd/999999): Bad file descriptor");
}
