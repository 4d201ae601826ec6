// A node agent in the cluster against a real etcd (scripts/with-etcd.sh): the registration lives and
// dies with its lease, a second agent for the node is refused, a lost lease stops the workers and
// the node rejoins with a fresh lease, assignments are admitted through the node's ledger (plans of
// the live node, applied for real: root), refused when fenced or malformed, released when deleted.
#include "EtcdTestSupport.h"
#include "ExecTestUtil.h"

#include "cluster/agent/ClusterAgent.h"
#include "cluster/etcd/Lease.h"
#include "executor/agent/NodeLedger.h"
#include "executor/Supervisor.h"
#include "hal/TopologyYaml.h"
#include "plan/PlanFile.h"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <sys/stat.h>

using namespace msc;
using namespace msc::cluster;
using namespace std::chrono_literals;
namespace et = msc::etcd::testing;

namespace {

// Gone or a zombie: not running any more.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pidField, comm, state;
  return (stat >> pidField >> comm >> state) && state != "Z";
}

class ClusterAgentTest : public ::testing::Test {
protected:
  void SetUp() override {
    MSC_REQUIRE_ETCD();
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root (the ledger applies plans: cgroups)";
    char tmpl[] = "/tmp/msc-cluster-agent-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    log_ = std::make_unique<exec::Logger>("cluster-agent-test", false);
    std::string error;
    ASSERT_TRUE(log_->openFile(dir_ + "/agent.log", error)) << error;
    exec::LedgerOptions lo;
    lo.appliers.cgroups = exec::CgroupLayout::discover();
    ledger_ = std::make_unique<exec::NodeLedger>(lo, *log_);
    client_ = et::connectTo(et::clusterEndpoints());
    node_ = std::string("node-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override {
    ledger_.reset(); // workers stopped before the registration goes, as in mscale-exec serve
    agent_.reset();
    if (!dir_.empty())
      std::system(("rm -rf " + dir_).c_str());
  }

  std::string endpoints() const { return std::getenv("ETCD_ENDPOINTS"); }
  std::string logText() const {
    std::ifstream in(dir_ + "/agent.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool startAgent(int64_t ttl = 5) {
    agent_ = std::make_unique<ClusterAgent>(ClusterAgentOptions{endpoints(), node_, "live", ttl}, *log_);
    return agent_->start(*ledger_);
  }
  // The agent's loop, until `done` or `timeout`.
  bool pump(const std::function<bool()> &done, std::chrono::milliseconds timeout = 5000ms) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      ledger_->supervise(SystemClock::instance().monotonicNs());
      agent_->tick(*ledger_);
      if (done())
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  void putAssignment(const std::string &contract, int64_t leaderRevision, const std::string &value) {
    ASSERT_TRUE(client_->put(assignmentKey(node_, contract), value));
  }
  std::string assignmentValue(const std::string &contract, int64_t leaderRevision, unsigned cpu,
                              std::vector<std::string> command = {MSC_EXEC_TEST_WORKER, "sleep", "30"}) {
    Assignment a;
    a.leaderRevision = leaderRevision;
    a.plan = plan::encodePlan(exec::test::livePlan(contract, false, cpu));
    a.command = std::move(command);
    return encodeAssignment(a);
  }
  std::optional<AssignmentStatus> status(const std::string &contract) {
    auto r = client_->range(statusKey(node_, contract));
    if (!r || r->kvs.empty())
      return std::nullopt;
    return decodeStatus(r->kvs.front().value);
  }
  std::optional<etcd::KeyValue> registration() {
    auto r = client_->range(nodeKey(node_));
    if (!r || r->kvs.empty())
      return std::nullopt;
    return r->kvs.front();
  }

  std::string dir_, node_;
  std::unique_ptr<exec::Logger> log_;
  std::unique_ptr<exec::NodeLedger> ledger_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<ClusterAgent> agent_;
};

} // namespace

TEST_F(ClusterAgentTest, RegistrationLivesAndDiesWithItsLease) {
  exec::Logger &log = *log_;
  RegistrationOptions o;
  o.node = node_;
  o.value = Registration{"test", "yaml: here\n"};
  o.ttlSeconds = 2;
  auto reg = std::make_unique<NodeRegistration>(*client_, o, log);
  ASSERT_TRUE(reg->registerNode().ok());
  std::optional<etcd::KeyValue> kv = registration();
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->lease, reg->leaseId());
  std::string why;
  std::optional<Registration> value = decodeRegistration(kv->value, why);
  ASSERT_TRUE(value) << why;
  EXPECT_EQ(value->topologyYaml, "yaml: here\n");

  // The keep-alive stops (what a hung or partitioned agent does): etcd drops the key after the TTL.
  auto start = std::chrono::steady_clock::now();
  reg->keepAlive()->stop();
  while (registration() && et::secondsSince(start) < 6)
    std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(registration());
  double gone = et::secondsSince(start);
  EXPECT_GE(gone, 1.0);
  EXPECT_LT(gone, 4.0);
  std::cout << "registration gone " << gone << " s after the keep-alive stopped (TTL 2 s)\n";

  // A registration that ends in order revokes its lease: the key is gone at once.
  reg = std::make_unique<NodeRegistration>(*client_, o, log);
  ASSERT_TRUE(reg->registerNode().ok());
  ASSERT_TRUE(registration());
  reg.reset();
  EXPECT_FALSE(registration());
}

TEST_F(ClusterAgentTest, TheLiveTopologyIsRegistered) {
  ASSERT_TRUE(startAgent());
  std::optional<etcd::KeyValue> kv = registration();
  ASSERT_TRUE(kv);
  std::string why;
  std::optional<Registration> value = decodeRegistration(kv->value, why);
  ASSERT_TRUE(value) << why;
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<hal::Topology> live = hal::loadTopology(hal::TopologySource::liveMachine(), diags);
  std::optional<hal::Topology> registered = hal::readTopologyYaml(value->topologyYaml, "registration", diags);
  ASSERT_TRUE(live && registered);
  // The machine, under the name it registered as (the controller compiles its plans for that).
  EXPECT_EQ(registered->name(), node_);
  live->setName(node_);
  EXPECT_EQ(registered->fingerprint(), live->fingerprint());
}

TEST_F(ClusterAgentTest, SecondAgentForTheNodeIsRefused) {
  ASSERT_TRUE(startAgent());
  int64_t first = registration()->lease;
  RegistrationOptions o;
  o.node = node_;
  o.value = Registration{"test", "x: 1\n"};
  NodeRegistration second(*client_, o, *log_);
  etcd::Status s = second.registerNode();
  EXPECT_EQ(s.code, etcd::ErrorCode::ERR_CLUSTER_002);
  EXPECT_EQ(s.str(), "error[ERR_CLUSTER_002]: node '" + node_ + "' is already registered by another live agent (lease " +
                         std::to_string(first) + ")");
  EXPECT_EQ(registration()->lease, first); // the first agent's registration is untouched

  // A whole second agent does not start, and says why in its log.
  exec::LedgerOptions lo;
  exec::NodeLedger otherLedger(lo, *log_);
  ClusterAgent other(ClusterAgentOptions{endpoints(), node_, "live", 5}, *log_);
  EXPECT_FALSE(other.start(otherLedger));
  EXPECT_NE(logText().find("error[ERR_CLUSTER_002]: node '" + node_ + "' is already registered"), std::string::npos)
      << logText();
}

TEST_F(ClusterAgentTest, AssignmentIsAdmittedAndReleased) {
  ASSERT_TRUE(startAgent());
  auto start = std::chrono::steady_clock::now();
  putAssignment("t1", 10, assignmentValue("t1", 10, 0));
  ASSERT_TRUE(pump([&] {
    auto s = status("t1");
    return s && s->state == "applied" && s->worker == "running";
  })) << logText();
  std::cout << "assignment put to status applied: " << et::secondsSince(start) << " s\n";
  const exec::NodeLedger::Contract *c = ledger_->find("t1");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->session->applied());
  pid_t worker = c->session->workerPid();
  EXPECT_TRUE(running(worker));
  EXPECT_EQ(status("t1")->leaderRevision, 10);
  EXPECT_EQ(status("t1")->pid, worker);

  ASSERT_TRUE(client_->remove(assignmentKey(node_, "t1")));
  ASSERT_TRUE(pump([&] { return !ledger_->find("t1") && !status("t1"); })) << logText();
  EXPECT_FALSE(running(worker));
}

TEST_F(ClusterAgentTest, StatusFollowsTheWorker) {
  ASSERT_TRUE(startAgent());
  putAssignment("t1", 10, assignmentValue("t1", 10, 0, {MSC_EXEC_TEST_WORKER, "exit", "3"}));
  ASSERT_TRUE(pump([&] { return status("t1") && status("t1")->worker == "exited"; })) << logText();
  std::optional<AssignmentStatus> s = status("t1");
  EXPECT_EQ(s->state, "applied"); // the resources stay until the assignment is deleted
  EXPECT_EQ(s->exitStatus, 3);
}

TEST_F(ClusterAgentTest, LowerLeaderRevisionIsRefused) {
  ASSERT_TRUE(startAgent());
  putAssignment("t1", 20, assignmentValue("t1", 20, 0));
  ASSERT_TRUE(pump([&] { return status("t1") && status("t1")->state == "applied"; })) << logText();
  // A deposed leader (revision 10) writes after the new one (20): refused, nothing applied.
  putAssignment("t2", 10, assignmentValue("t2", 10, 1));
  ASSERT_TRUE(pump([&] { return status("t2").has_value(); })) << logText();
  std::optional<AssignmentStatus> s = status("t2");
  EXPECT_EQ(s->state, "refused");
  EXPECT_EQ(s->code, "ERR_CLUSTER_003");
  EXPECT_EQ(s->leaderRevision, 10);
  const std::string expected = "error[ERR_CLUSTER_003]: assignment '" + assignmentKey(node_, "t2") +
                               "' refused: leader revision 10 is lower than 20, the newest this agent has seen";
  ASSERT_EQ(s->messages.size(), 1u);
  EXPECT_EQ(s->messages[0], expected);
  EXPECT_NE(logText().find(expected), std::string::npos) << logText();
  EXPECT_EQ(ledger_->find("t2"), nullptr);
  EXPECT_NE(ledger_->find("t1"), nullptr);
  EXPECT_EQ(agent_->watcher()->highestLeaderRevision(), 20);
  // The same leader's next assignment passes.
  putAssignment("t2", 20, assignmentValue("t2", 20, 1, {}));
  ASSERT_TRUE(pump([&] { return status("t2") && status("t2")->state == "applied"; })) << logText();
}

TEST_F(ClusterAgentTest, MalformedAssignmentIsRefused) {
  ASSERT_TRUE(startAgent());
  putAssignment("t1", 0, "not an assignment");
  ASSERT_TRUE(pump([&] { return status("t1").has_value(); })) << logText();
  std::optional<AssignmentStatus> s = status("t1");
  EXPECT_EQ(s->state, "refused");
  EXPECT_EQ(s->code, "ERR_CLUSTER_004");
  ASSERT_EQ(s->messages.size(), 1u);
  EXPECT_EQ(s->messages[0], "error[ERR_CLUSTER_004]: malformed assignment '" + assignmentKey(node_, "t1") +
                                "': not an encoded assignment (17 bytes)");
  EXPECT_TRUE(ledger_->contracts().empty());

  // A well-formed assignment whose plan is for another contract than its key names.
  putAssignment("t3", 5, assignmentValue("other", 5, 0));
  ASSERT_TRUE(pump([&] { return status("t3").has_value(); })) << logText();
  EXPECT_EQ(status("t3")->code, "ERR_CLUSTER_004");
  EXPECT_NE(status("t3")->messages.at(0).find("the plan is for contract 'other', the key names 't3'"), std::string::npos);
  EXPECT_TRUE(ledger_->contracts().empty());

  // Plan bytes that are not a plan: the plan file's own code, nothing applied.
  Assignment a;
  a.leaderRevision = 5;
  a.plan = "garbage plan bytes";
  putAssignment("t4", 5, encodeAssignment(a));
  ASSERT_TRUE(pump([&] { return status("t4").has_value(); })) << logText();
  EXPECT_EQ(status("t4")->state, "refused");
  EXPECT_FALSE(status("t4")->code.empty());
  EXPECT_TRUE(ledger_->contracts().empty());
}

TEST_F(ClusterAgentTest, LostLeaseStopsTheWorkersAndTheNodeRejoins) {
  ASSERT_TRUE(startAgent(2));
  putAssignment("t1", 10, assignmentValue("t1", 10, 0));
  ASSERT_TRUE(pump([&] { return status("t1") && status("t1")->worker == "running"; })) << logText();
  pid_t worker = ledger_->find("t1")->session->workerPid();
  ASSERT_TRUE(running(worker));
  int64_t lease = agent_->registration()->leaseId();

  // The lease revoked from outside: deterministic, what etcd does to a partitioned agent's lease.
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client_->revokeLease(lease).ok());
  ASSERT_TRUE(pump([&] { return ledger_->contracts().empty(); })) << logText();
  double stopped = et::secondsSince(start);
  std::cout << "workers stopped " << stopped << " s after the lease was revoked\n";
  EXPECT_FALSE(running(worker));
  EXPECT_NE(logText().find("error[ERR_CLUSTER_005]: node '" + node_ + "' lost its registration (lease " +
                           std::to_string(lease) + "): "),
            std::string::npos)
      << logText();
  EXPECT_NE(logText().find("stopped 1 contract(s)"), std::string::npos);

  // The node registers again under a fresh lease and admits its assignment again.
  ASSERT_TRUE(pump([&] {
    auto kv = registration();
    return kv && kv->lease != lease && ledger_->find("t1") && status("t1") && status("t1")->worker == "running";
  }, 8000ms)) << logText();
  EXPECT_NE(agent_->registration()->leaseId(), lease);
  EXPECT_NE(ledger_->find("t1")->session->workerPid(), worker);
}

TEST_F(ClusterAgentTest, RestartedAgentAdoptsWhatItsStateDirectoryReapplied) {
  exec::LedgerOptions lo;
  lo.appliers.cgroups = exec::CgroupLayout::discover();
  lo.config.stateDir = dir_ + "/state";
  ledger_ = std::make_unique<exec::NodeLedger>(lo, *log_);
  ASSERT_TRUE(startAgent());
  putAssignment("t1", 10, assignmentValue("t1", 10, 0));
  ASSERT_TRUE(pump([&] { return status("t1") && status("t1")->worker == "running"; })) << logText();
  pid_t first = ledger_->find("t1")->session->workerPid();

  // The agent restarts: its contracts released (the admission stays in the state directory), its
  // lease revoked; the new one re-applies the plan without a worker, as mscale-exec serve does.
  ledger_.reset();
  agent_.reset();
  EXPECT_FALSE(running(first));
  ledger_ = std::make_unique<exec::NodeLedger>(lo, *log_);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  ledger_->loadState(diags);
  ASSERT_NE(ledger_->find("t1"), nullptr);
  EXPECT_EQ(ledger_->find("t1")->workerState, exec::NodeLedger::WorkerState::None);

  // The assignment, still in etcd, is the authority: admitted again with its worker, not refused as
  // a second admission of the contract.
  ASSERT_TRUE(startAgent());
  ASSERT_TRUE(pump([&] { return status("t1") && status("t1")->worker == "running"; })) << logText();
  EXPECT_EQ(status("t1")->state, "applied");
  EXPECT_NE(logText().find("held without a worker (re-applied from the state directory)"), std::string::npos);
}

TEST_F(ClusterAgentTest, EtcdUnreachablePastTheTtlStopsTheWorkers) {
  // Every member frozen (SIGSTOP): to the agent, a partition from etcd. Its keep-alive gives up when
  // the TTL has run out without a renewal; the agent must then stop its workers on its own.
  ASSERT_TRUE(startAgent(2));
  putAssignment("t1", 10, assignmentValue("t1", 10, 0));
  ASSERT_TRUE(pump([&] { return status("t1") && status("t1")->worker == "running"; })) << logText();
  pid_t worker = ledger_->find("t1")->session->workerPid();
  int64_t lease = agent_->registration()->leaseId();

  std::vector<int> members;
  for (size_t m = 0; m < 3; ++m)
    members.push_back(et::memberPid(m));
  struct Resume { // SIGCONT whatever happens below: the next tests need the cluster
    std::vector<int> &pids;
    ~Resume() {
      for (int pid : pids)
        ::kill(pid, SIGCONT);
    }
  } resume{members};
  for (int pid : members)
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  auto start = std::chrono::steady_clock::now();
  bool stopped = pump([&] { return ledger_->contracts().empty(); }, 10000ms);
  double after = et::secondsSince(start);
  // While etcd stays away the agent registers again in the background: its loop (which serves the
  // local socket) is not held up by etcd calls waiting for their deadline.
  double slowest = 0;
  for (auto until = std::chrono::steady_clock::now() + 1500ms; std::chrono::steady_clock::now() < until;) {
    auto t0 = std::chrono::steady_clock::now();
    agent_->tick(*ledger_);
    slowest = std::max(slowest, et::secondsSince(t0));
    std::this_thread::sleep_for(20ms);
  }
  for (int pid : members)
    ::kill(pid, SIGCONT);
  ASSERT_TRUE(stopped) << logText();
  EXPECT_LT(slowest, 0.1);
  std::cout << "workers stopped " << after << " s after etcd became unreachable (TTL 2 s)\n";
  EXPECT_LT(after, 4.0);
  EXPECT_FALSE(running(worker));
  EXPECT_NE(logText().find("error[ERR_CLUSTER_005]: node '" + node_ + "' lost its registration (lease " +
                           std::to_string(lease) + ")"),
            std::string::npos)
      << logText();

  // etcd back: the lost lease is revoked (etcd's new raft leader had extended it), the node registers
  // under a fresh one and runs its assignment again.
  auto back = std::chrono::steady_clock::now();
  ASSERT_TRUE(pump([&] {
    auto kv = registration();
    return kv && kv->lease != lease && ledger_->find("t1") && status("t1") && status("t1")->worker == "running";
  }, 30000ms)) << logText();
  std::cout << "registered again and running " << et::secondsSince(back) << " s after etcd came back\n";
}

namespace {
// The variables of a running process, from /proc (root reads any).
std::map<std::string, std::string> environmentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
  std::map<std::string, std::string> out;
  for (std::string entry; std::getline(in, entry, '\0');)
    if (size_t eq = entry.find('='); eq != std::string::npos)
      out[entry.substr(0, eq)] = entry.substr(eq + 1);
  return out;
}
// The file (device, inode) behind a process's descriptor: a memfd is the same region only if equal.
std::pair<dev_t, ino_t> fileOf(pid_t pid, const std::string &fd) {
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(pid) + "/fd/" + fd).c_str(), &st) != 0)
    return {0, 0};
  return {st.st_dev, st.st_ino};
}
} // namespace

// Issue 29: a world-size change that keeps this node (the survivor of a shrink, a node of a grow)
// restarts its worker at the new place with the contract still applied and the same memory tier;
// an assignment whose submission changed is another job: released and admitted anew.
TEST_F(ClusterAgentTest, TheSameJobPlacedAnewKeepsItsResourcesAndMemoryTier) {
  ASSERT_TRUE(startAgent());
  plan::Plan p = exec::test::livePlan("t1", false, 0);
  p.mutable_fault_tolerance()->set_snapshot_every_steps(10);
  p.mutable_fault_tolerance()->set_in_memory_tier(true);
  auto placed = [&](int64_t leaderRevision, const std::string &rank, const std::string &world,
                    const std::string &dataset) {
    Assignment a;
    a.leaderRevision = leaderRevision;
    a.plan = plan::encodePlan(p);
    a.command = {MSC_EXEC_TEST_WORKER, "sleep", "30"};
    a.environment = {{"RANK", rank}, {"WORLD_SIZE", world}, {"MASTER_PORT", "2950" + rank}, {"DATASET", dataset}};
    return encodeAssignment(a);
  };
  putAssignment("t1", 10, placed(10, "2", "4", "laion"));
  ASSERT_TRUE(pump([&] { return status("t1") && status("t1")->worker == "running"; })) << logText();
  const exec::Session *session = ledger_->find("t1")->session.get();
  pid_t first = session->workerPid();
  std::map<std::string, std::string> env = environmentOf(first);
  ASSERT_TRUE(env.count("MSCALE_SNAPSHOT_MEMFD")) << "the plan keeps an in-memory tier";
  std::pair<dev_t, ino_t> tier = fileOf(first, env["MSCALE_SNAPSHOT_MEMFD"]);

  putAssignment("t1", 11, placed(11, "1", "3", "laion"));
  ASSERT_TRUE(pump([&] {
    auto s = status("t1");
    return s && s->leaderRevision == 11 && s->worker == "running" && s->pid != first;
  })) << logText();
  ASSERT_EQ(ledger_->find("t1")->session.get(), session) << "the contract was not released";
  pid_t second = session->workerPid();
  EXPECT_FALSE(running(first));
  env = environmentOf(second);
  EXPECT_EQ(env["RANK"], "1");
  EXPECT_EQ(env["WORLD_SIZE"], "3");
  EXPECT_EQ(env["MSCALE_RESTART_REASON"], "reassigned");
  EXPECT_EQ(fileOf(second, env["MSCALE_SNAPSHOT_MEMFD"]), tier) << "the memory tier the old place wrote";
  EXPECT_NE(logText().find("placed anew (rank 2 of 4 -> rank 1 of 3, leader revision 11)"), std::string::npos)
      << logText();

  // Another dataset is another job: released, admitted anew, a new memory tier.
  putAssignment("t1", 12, placed(12, "1", "3", "coco"));
  ASSERT_TRUE(pump([&] {
    auto s = status("t1");
    return s && s->leaderRevision == 12 && s->worker == "running";
  })) << logText();
  EXPECT_NE(logText().find("assignment changed: releasing the contract before admitting the new plan"),
            std::string::npos);
  pid_t third = ledger_->find("t1")->session->workerPid();
  env = environmentOf(third);
  EXPECT_EQ(env["DATASET"], "coco");
  EXPECT_EQ(env.count("MSCALE_RESTART_REASON"), 0u);
  EXPECT_NE(fileOf(third, env["MSCALE_SNAPSHOT_MEMFD"]), tier);
}
