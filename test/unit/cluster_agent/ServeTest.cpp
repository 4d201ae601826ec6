// `mscale-exec serve --endpoints H:P,... --node NAME` as a process against the real etcd: the node
// registers, admits an assignment, leaves the cluster at once on SIGTERM; a second agent for the
// node and bad options are refused with their codes.
#include "EtcdTestSupport.h"
#include "ExecTestUtil.h"

#include "cluster/keys/Keys.h"
#include "hal/TopologyYaml.h"
#include "plan/PlanFile.h"

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>

using namespace msc;
using namespace msc::cluster;
using namespace std::chrono_literals;
namespace et = msc::etcd::testing;

namespace {

class ServeTest : public ::testing::Test {
protected:
  void SetUp() override {
    MSC_REQUIRE_ETCD();
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root (the agent applies plans: cgroups)";
    char tmpl[] = "/tmp/msc-cluster-serve-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    client_ = et::connectTo(et::clusterEndpoints());
    node_ = std::string("serve-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (!dir_.empty())
      std::system(("rm -rf " + dir_).c_str());
  }

  // Starts mscale-exec with `args`, stderr to DIR/<name>.err.
  pid_t spawn(const std::string &name, std::vector<std::string> args) {
    args.insert(args.begin(), MSC_MSCALE_EXEC);
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open((dir_ + "/" + name + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      std::vector<char *> argv;
      for (std::string &a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    pids_.push_back(pid);
    return pid;
  }
  int wait(pid_t pid) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    pids_.erase(std::remove(pids_.begin(), pids_.end(), pid), pids_.end());
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  std::string err(const std::string &name) {
    std::ifstream in(dir_ + "/" + name + ".err");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<std::string> serveArgs(const std::string &name) {
    return {"serve", "--socket", dir_ + "/" + name + ".sock", "--endpoints", std::getenv("ETCD_ENDPOINTS"), "--node",
            node_, "--lease-ttl", "3s"};
  }
  bool waitFor(const std::function<bool()> &done, std::chrono::milliseconds timeout = 5000ms) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (done())
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  bool registered() {
    auto r = client_->range(nodeKey(node_));
    return r && !r->kvs.empty();
  }

  std::string dir_, node_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::vector<pid_t> pids_;
};

} // namespace

TEST_F(ServeTest, RegistersAdmitsAndLeavesOnSigterm) {
  pid_t agent = spawn("a", serveArgs("a"));
  ASSERT_TRUE(waitFor([&] { return registered(); })) << err("a");
  auto lease = client_->range(nodeKey(node_));
  EXPECT_EQ(client_->leaseTimeToLive(lease->kvs.front().lease).ok(), true);

  Assignment a;
  a.leaderRevision = 3;
  a.plan = plan::encodePlan(exec::test::livePlan("s1", false, 0, node_)); // as a controller compiles it
  a.command = {MSC_EXEC_TEST_WORKER, "sleep", "30"};
  ASSERT_TRUE(client_->put(assignmentKey(node_, "s1"), encodeAssignment(a)));
  ASSERT_TRUE(waitFor([&] {
    auto r = client_->range(statusKey(node_, "s1"));
    if (!r || r->kvs.empty())
      return false;
    auto s = decodeStatus(r->kvs.front().value);
    return s && s->state == "applied" && s->worker == "running";
  })) << err("a");

  // A second agent for the same node does not start.
  pid_t second = spawn("b", serveArgs("b"));
  EXPECT_EQ(wait(second), 1);
  EXPECT_NE(err("b").find("error[ERR_CLUSTER_002]: node '" + node_ + "' is already registered by another live agent"),
            std::string::npos)
      << err("b");
  EXPECT_TRUE(registered());

  // SIGTERM: workers stopped, then the lease revoked: the node leaves at once, not after the TTL.
  auto start = std::chrono::steady_clock::now();
  ::kill(agent, SIGTERM);
  EXPECT_EQ(wait(agent), 0) << err("a");
  EXPECT_FALSE(registered());
  EXPECT_LT(et::secondsSince(start), 2.0);
}

TEST_F(ServeTest, BadClusterOptionsAreRefused) {
  // --cluster is the older spelling of --endpoints: still taken, with a note.
  pid_t p = spawn("e", {"serve", "--socket", dir_ + "/e.sock", "--cluster", ",", "--node", node_});
  EXPECT_EQ(wait(p), 1);
  EXPECT_NE(err("e").find("warning[WRN_DRV_001]: --cluster is deprecated; write --endpoints"), std::string::npos)
      << err("e");
  EXPECT_NE(err("e").find("error[ERR_ETCD_001]"), std::string::npos) << err("e");
  p = spawn("n", {"serve", "--socket", dir_ + "/n.sock", "--endpoints", std::getenv("ETCD_ENDPOINTS")});
  EXPECT_EQ(wait(p), 2);
  EXPECT_NE(err("n").find("error[ERR_DRV_005]: invalid option value: --endpoints needs --node NAME"), std::string::npos)
      << err("n");
  p = spawn("t", {"serve", "--socket", dir_ + "/t.sock", "--endpoints", "127.0.0.1:1", "--node", "x", "--lease-ttl",
                  "five"});
  EXPECT_EQ(wait(p), 2);
  EXPECT_NE(err("t").find("error[ERR_DRV_005]: invalid option value: --lease-ttl 'five'"), std::string::npos)
      << err("t");
  p = spawn("a", {"serve", "--socket", dir_ + "/a.sock", "--endpoints", "127.0.0.1:1", "--node", "x",
                  "--advertise-address", "two words"});
  EXPECT_EQ(wait(p), 2);
  EXPECT_NE(err("a").find("error[ERR_DRV_005]: invalid option value: --advertise-address 'two words': a host name "
                          "or an IP address, without blanks"),
            std::string::npos)
      << err("a");
  EXPECT_FALSE(registered());
}

TEST_F(ServeTest, ServesARecordedNode) {
  // --topology FILE: the agent registers the recorded node (what it re-checks plans against), the
  // way a cluster of recorded nodes is tried on one machine.
  std::vector<std::string> args = serveArgs("r");
  args.push_back("--topology");
  args.push_back(MSC_SOURCE_DIR "/test/fuzz/seeds/topology_yaml/jureca-4xa100.yaml");
  pid_t agent = spawn("r", args);
  ASSERT_TRUE(waitFor([&] { return registered(); })) << err("r");
  auto kv = client_->range(nodeKey(node_));
  std::string why;
  std::optional<Registration> r = decodeRegistration(kv->kvs.front().value, why);
  ASSERT_TRUE(r) << why;
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<hal::Topology> t = hal::readTopologyYaml(r->topologyYaml, "registration", diags);
  ASSERT_TRUE(t);
  // The recorded node under the name it registered as.
  EXPECT_EQ(t->name(), node_);
  std::optional<hal::Topology> recorded =
      hal::loadTopology(hal::TopologySource::file(MSC_SOURCE_DIR "/test/fuzz/seeds/topology_yaml/jureca-4xa100.yaml"), diags);
  ASSERT_TRUE(recorded);
  EXPECT_EQ(recorded->name(), "jrc0323");
  recorded->setName(node_);
  EXPECT_EQ(t->fingerprint(), recorded->fingerprint());
  ::kill(agent, SIGTERM);
  EXPECT_EQ(wait(agent), 0) << err("r");
  EXPECT_FALSE(registered());
}
