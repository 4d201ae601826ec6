// Taking a descriptor of another process (the node agent) into this one: here
// this process plays the agent, which pidfd_getfd allows (a process may trace
// itself).
#include "slurm/AgentDescriptors.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace msc::slurm;

TEST(AgentDescriptors, TakesTheAgentsMemoryFileAndKeepsItAcrossExec) {
  int agentFd = ::memfd_create("mscale-control", MFD_CLOEXEC);
  ASSERT_GE(agentFd, 0);
  ASSERT_EQ(::write(agentFd, "beat", 4), 4);
  std::string error;
  int fd = takeAgentDescriptor({"MSCALE_CONTROL_FD", ::getpid(), agentFd}, error);
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
  EXPECT_EQ(takeAgentDescriptor({"MSCALE_CONTROL_FD", ::getpid(), other}, error), -1);
  EXPECT_EQ(error, "the node agent's /proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(other) +
                       " for MSCALE_CONTROL_FD is not one of its memory files (/dev/null)");
  EXPECT_EQ(takeAgentDescriptor({"MSCALE_POOL_DATA_FD", ::getpid(), foreign}, error), -1);
  EXPECT_NE(error.find("(/memfd:someone-else (deleted))"), std::string::npos) << error;
  ::close(other);
  ::close(foreign);
}

TEST(AgentDescriptors, ANumberTheAgentDoesNotHold) {
  std::string error;
  EXPECT_EQ(takeAgentDescriptor({"MSCALE_CONTROL_FD", ::getpid(), 999999}, error), -1);
  EXPECT_EQ(error, "cannot take MSCALE_CONTROL_FD from the node agent (/proc/" + std::to_string(::getpid()) +
                       "/fd/999999): Bad file descriptor");
}
