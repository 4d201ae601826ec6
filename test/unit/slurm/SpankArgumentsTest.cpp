// The SPANK plugin's parsers (slurm/SpankArguments.h): plugstack.conf arguments, the contract value,
// and the two mscale-cli answers it reads. Each refusal carries its code and says what was wrong.
#include "slurm/SpankArguments.h"

#include <gtest/gtest.h>

using namespace msc::slurm;

TEST(SpankArguments, DefaultsAndEveryArgument) {
  std::string error;
  std::optional<PluginConfig> c = parsePluginArguments({}, "/usr/local/bin", error);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bindir, "/usr/local/bin");
  EXPECT_EQ(c->timeoutSeconds, 60u);
  c = parsePluginArguments({"bindir=/opt/m/bin", "socket=/run/m.sock", "stdlib=/opt/m/stdlib", "timeout=5"}, "/x", error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->bindir, "/opt/m/bin");
  EXPECT_EQ(c->socket, "/run/m.sock");
  EXPECT_EQ(c->stdlib, "/opt/m/stdlib");
  EXPECT_EQ(c->timeoutSeconds, 5u);
}

TEST(SpankArguments, BadPluginArgumentsAreErrSlurm001) {
  for (const char *bad : {"sokcet=/run/m.sock", "bindir", "bindir=relative/bin", "bindir=", "timeout=0", "timeout=3601",
                          "timeout=5s", "timeout=-1", "socket=/a\nb"}) {
    std::string error;
    EXPECT_FALSE(parsePluginArguments({bad}, "/x", error)) << bad;
    EXPECT_EQ(error.rfind("ERR_SLURM_001: plugstack.conf argument '", 0), 0u) << error;
  }
  std::string error;
  parsePluginArguments({"sokcet=/run/m.sock"}, "/x", error);
  EXPECT_EQ(error, "ERR_SLURM_001: plugstack.conf argument 'sokcet=/run/m.sock' of mscale_spank.so: unknown argument "
                   "(expected bindir=, socket=, stdlib= or timeout=)");
}

TEST(SpankArguments, ContractValue) {
  std::string error;
  EXPECT_EQ(parseContractValue("train.msc", "--mscale-contract", error), "train.msc");
  EXPECT_FALSE(parseContractValue("", "--mscale-contract", error));
  EXPECT_EQ(error, "ERR_SLURM_002: contract '' given with --mscale-contract: the file name is empty");
  EXPECT_FALSE(parseContractValue("a\nb.msc", "MSCALE_CONTRACT", error));
  EXPECT_EQ(error, "ERR_SLURM_002: contract 'a?b.msc' given with MSCALE_CONTRACT: the file name holds control characters");
  EXPECT_FALSE(parseContractValue(std::string(4096, 'a'), "MSCALE_CONTRACT", error));
  EXPECT_NE(error.find("longer than 4095 bytes"), std::string::npos);
}

TEST(SpankArguments, SubmittedContract) {
  std::string error;
  EXPECT_EQ(parseSubmittedContract("contract qwen_vl.1-a\n  plan x\n", error), "qwen_vl.1-a");
  for (const char *bad : {"", "contract \n", "contract .hidden\n", "contract a/b\n", "status ok\n", "contract a b\n"})
    EXPECT_FALSE(parseSubmittedContract(bad, error)) << bad;
  EXPECT_FALSE(parseSubmittedContract("contract " + std::string(129, 'a'), error));
}

TEST(SpankArguments, AttachAnswerEnvironment) {
  std::string error;
  auto answer = parseAttachAnswer("MSCALE_CPUS=1\n\nMSCALE_PLAN=/var/lib/m/a.msp\nMSCALE_ROLES=\n", error);
  ASSERT_TRUE(answer) << error;
  const auto &env = answer->environment;
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"MSCALE_CPUS", "1"}));
  EXPECT_EQ(env[2], (std::pair<std::string, std::string>{"MSCALE_ROLES", ""}));
  EXPECT_TRUE(answer->fds.empty());
  for (const char *bad : {"PATH=/evil\n", "MSCALE_=x\n", "MSCALE_cpus=1\n", "MSCALE_CPUS\n", "LD_PRELOAD=/x.so\n",
                          "MSCALE_A=b\tc\n"})
    EXPECT_FALSE(parseAttachAnswer(bad, error)) << bad;
  parseAttachAnswer("LD_PRELOAD=/x.so", error);
  EXPECT_EQ(error, "not an MSCALE_NAME=VALUE line: 'LD_PRELOAD=/x.so'");
}

TEST(SpankArguments, AttachAnswerDescriptors) {
  std::string error;
  auto answer = parseAttachAnswer("MSCALE_CPUS=1\nfd MSCALE_CONTROL_FD /proc/4242/fd/12 2049:13312\n"
                                  "fd MSCALE_POOL_DATA_FD /proc/4242/fd/0 18446744073709551615:1\n",
                                  error);
  ASSERT_TRUE(answer) << error;
  ASSERT_EQ(answer->fds.size(), 2u);
  EXPECT_EQ(answer->fds[0].variable, "MSCALE_CONTROL_FD");
  EXPECT_EQ(answer->fds[0].agentPid, 4242);
  EXPECT_EQ(answer->fds[0].agentFd, 12);
  EXPECT_EQ(answer->fds[0].device, 2049u);
  EXPECT_EQ(answer->fds[0].inode, 13312u);
  EXPECT_EQ(answer->fds[1].agentFd, 0);
  EXPECT_EQ(answer->fds[1].device, UINT64_MAX);
  for (const char *bad : {"fd MSCALE_CONTROL_FD\n", "fd PATH /proc/1/fd/3 1:2\n", "fd MSCALE_X /proc/0/fd/3 1:2\n",
                          "fd MSCALE_X /proc/1/fd/ 1:2\n", "fd MSCALE_X /proc/1/fd/-3 1:2\n",
                          "fd MSCALE_X /dev/fd/3 1:2\n", "fd MSCALE_X /proc/1/fd/3 1:2 extra\n",
                          "fd MSCALE_X /proc/12345678901/fd/3 1:2\n", "fd MSCALE_X /proc/1/fd/3x 1:2\n",
                          "fd  MSCALE_X /proc/1/fd/3 1:2\n", "fd MSCALE_X /proc/1/fd/3\n",
                          "fd MSCALE_X /proc/1/fd/3 12\n", "fd MSCALE_X /proc/1/fd/3 1:\n",
                          "fd MSCALE_X /proc/1/fd/3 :2\n", "fd MSCALE_X /proc/1/fd/3 1:18446744073709551616\n",
                          "fd MSCALE_X /proc/1/fd/3 -1:2\n"})
    EXPECT_FALSE(parseAttachAnswer(bad, error)) << bad;
  parseAttachAnswer("fd MSCALE_X /proc/self/fd/3 1:2", error);
  EXPECT_EQ(error, "not an 'fd MSCALE_NAME /proc/PID/fd/N DEV:INO' line: 'fd MSCALE_X /proc/self/fd/3 1:2'");
  parseAttachAnswer("fd MSCALE_X /proc/1/fd/3 1:2\nfd MSCALE_X /proc/1/fd/4 1:3\n", error);
  EXPECT_EQ(error, "the agent's answer names MSCALE_X twice");
}

TEST(SpankArguments, SocketForHost) {
  EXPECT_EQ(socketForHost("/run/mscale/agent.sock", "n1"), "/run/mscale/agent.sock");
  EXPECT_EQ(socketForHost("/run/mscale/agent.%h.sock", "jwb0004"), "/run/mscale/agent.jwb0004.sock");
  EXPECT_EQ(socketForHost("/r/%h/%h", "a"), "/r/a/a");
  EXPECT_EQ(socketForHost("/r/100%%/%n%", "a"), "/r/100%/%n%");
}
