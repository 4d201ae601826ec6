#include "EtcdTestSupport.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <sys/wait.h>

namespace msc::etcd::testing {

std::vector<std::string> clusterEndpoints() {
  const char *env = std::getenv("ETCD_ENDPOINTS");
  if (!env || !*env)
    return {};
  auto parsed = parseEndpoints(env);
  return parsed ? *parsed : std::vector<std::string>{};
}

namespace {
std::string clusterFile(const std::string &name) {
  const char *dir = std::getenv("ETCD_CLUSTER_DIR");
  EXPECT_NE(dir, nullptr) << "ETCD_CLUSTER_DIR is set by scripts/with-etcd.sh";
  std::ifstream in(std::string(dir ? dir : ".") + "/" + name);
  std::string content;
  std::getline(in, content);
  return content;
}
} // namespace

int memberPid(size_t member) { return std::atoi(clusterFile("m" + std::to_string(member) + ".pid").c_str()); }

std::string memberEndpoint(size_t member) { return clusterFile("m" + std::to_string(member) + ".endpoint"); }

void killMember(size_t member) {
  const int pid = memberPid(member);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  // The member is a child of with-etcd's shell, not ours: wait until it is no longer running
  // (a zombie counts as gone: /proc/PID/stat says state Z).
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pidField, comm, state;
    if (!(stat >> pidField >> comm >> state) || state == "Z")
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << "etcd member " << member << " (pid " << pid << ") still runs after SIGKILL";
}

int raftLeader(EtcdClient &client) {
  for (size_t member = 0; member < 3; ++member) {
    auto status = client.memberStatus(memberEndpoint(member));
    if (status && status->isLeader())
      return static_cast<int>(member);
  }
  return -1;
}

std::unique_ptr<EtcdClient> connectTo(std::vector<std::string> endpoints, Milliseconds callTimeout) {
  ClientOptions options;
  options.endpoints = std::move(endpoints);
  options.callTimeout = callTimeout;
  auto client = EtcdClient::connect(options);
  EXPECT_TRUE(client.ok()) << client.status().str();
  return client ? std::move(*client) : nullptr;
}

std::string testPrefix() {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string("msc-test/") + info->test_suite_name() + "." + info->name() + "/";
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace msc::etcd::testing
