// What the leading controller decides about a cluster it read, without etcd: the state is built
// from the keys a store would hold (registrations of recorded machines, submissions, assignments,
// the config), time is a number, and the writes are checked before a fake fenced commit.
#include "cluster/controller/Decide.h"
#include "cluster/controller/Reconcile.h"
#include "hal/Loader.h"
#include "hal/TopologyYaml.h"
#include "plan/PlanFile.h"

#include <gtest/gtest.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>

namespace msc::cluster {
namespace {

constexpr int64_t kLeaderRev = 7;
constexpr uint64_t kSecond = 1'000'000'000;

const std::string &machineYaml() {
  static const std::string yaml = [] {
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    std::optional<hal::Topology> topo = hal::loadTopology(
        hal::TopologySource::file(std::string(MSC_SOURCE_DIR) +
                                  "/../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"),
        diags);
    EXPECT_TRUE(topo) << (sink.diags.empty() ? "" : sink.diags.front().message);
    return topo ? hal::writeTopologyYaml(*topo) : std::string();
  }();
  return yaml;
}

const char *kPair = "import \"profiles/mlvm.msc\";\ncontract pair uses profile mlvm_light {\n  nodes = 2;\n"
                    "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";

// The keys under /mscale/ a store would hold, in key order, at one revision.
struct Store {
  std::map<std::string, std::string> keys;
  int64_t revision = 40;
  void node(const std::string &name) {
    keys[std::string(kNodesPrefix) + name] = encodeRegistration({"test", machineYaml()});
  }
  void contract(const std::string &name, const std::string &source) {
    keys[std::string(kContractsPrefix) + name] = encodeSubmission({name, source, {"/bin/true"}, {}});
  }
  void assign(const std::string &node, const std::string &contract, const Decision &from) {
    // The plan the decision put for `node`, as an agent would find it.
    for (const ContractAction &a : from.actions)
      for (const etcd::TxnOp &op : a.ops)
        if (op.key == assignmentKey(node, contract))
          keys[op.key] = op.value;
  }
  ClusterState read(ReconcileMemory &memory) const {
    std::vector<etcd::KeyValue> kvs;
    for (const auto &[k, v] : keys) {
      etcd::KeyValue kv;
      kv.key = k;
      kv.value = v;
      kv.modRevision = revision;
      kvs.push_back(kv);
    }
    return clusterStateFrom(kvs, revision, memory);
  }
};

ReconcileOptions options() {
  ReconcileOptions o;
  o.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  o.compilerVersion = "test";
  o.lostNodeGrace = std::chrono::milliseconds(2000);
  return o;
}

// A store and a leader's memory of it: nodes registered, contracts submitted, rounds decided.
struct Cluster {
  Store store;
  ReconcileMemory memory;
  Cluster(std::initializer_list<const char *> nodes, const std::string &contract = "pair", const char *source = kPair) {
    for (const char *n : nodes)
      store.node(n);
    if (!contract.empty())
      store.contract(contract, source);
  }
  Decision decideAt(uint64_t nowNs = 0) { return decide(store.read(memory), memory, nowNs, options(), kLeaderRev); }
  // A round that places `contract`, its assignments then in the store as its agents would find them.
  void placed(const std::string &contract = "pair") {
    Decision d = decideAt();
    for (const char *node : {"n1", "n2", "n3"})
      store.assign(node, contract, d);
  }
  void lose(const std::string &node) { store.keys.erase(std::string(kNodesPrefix) + node); }
};

const ContractAction *actionFor(const Decision &d, const std::string &contract) {
  auto it = std::find_if(d.actions.begin(), d.actions.end(),
                         [&](const ContractAction &a) { return a.contract == contract; });
  return it == d.actions.end() ? nullptr : &*it;
}

std::vector<std::string> puts(const ContractAction &a) {
  std::vector<std::string> out;
  for (const etcd::TxnOp &op : a.ops)
    if (op.kind == etcd::TxnOp::Kind::Put)
      out.push_back(op.key);
  return out;
}
std::vector<std::string> removes(const ContractAction &a) {
  std::vector<std::string> out;
  for (const etcd::TxnOp &op : a.ops)
    if (op.kind == etcd::TxnOp::Kind::Delete)
      out.push_back(op.key);
  return out;
}
std::string statusOf(const ContractAction &a) {
  for (const etcd::TxnOp &op : a.ops)
    if (op.key == std::string(kContractStatusPrefix) + a.contract)
      return op.value;
  return {};
}

} // namespace

TEST(Decide, AContractIsPlacedWholeOnAsManyNodesAsItAsks) {
  Cluster cluster({"n1", "n2", "n3"});
  Decision d = cluster.decideAt();
  const ContractAction *a = actionFor(d, "pair");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  EXPECT_EQ(puts(*a), (std::vector<std::string>{assignmentKey("n1", "pair"), assignmentKey("n2", "pair"),
                                                 std::string(kContractStatusPrefix) + "pair"}));
  EXPECT_EQ(statusOf(*a), "placed n1,n2 leader-rev 7\n");
  EXPECT_EQ(d.report.placed, std::vector<std::string>{"pair -> n1,n2"});
  // The assignment carries the plan for its node, the command and the leader's revision.
  std::string why;
  std::optional<Assignment> assignment = decodeAssignment(a->ops[0].value, why);
  ASSERT_TRUE(assignment) << why;
  EXPECT_EQ(assignment->leaderRevision, kLeaderRev);
  EXPECT_EQ(assignment->command, std::vector<std::string>{"/bin/true"});
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<plan::Plan> p = plan::decodePlan(assignment->plan, "n1", diags);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->provenance().contract(), "pair");
  EXPECT_EQ(p->provenance().topology_name(), "n1");
}

TEST(Decide, AContractThatCannotBePlacedWholeIsRefusedWithTheReasonInItsStatus) {
  Cluster cluster({"n1"});
  Decision d = cluster.decideAt();
  const ContractAction *a = actionFor(d, "pair");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Refuse);
  EXPECT_EQ(puts(*a), std::vector<std::string>{std::string(kContractStatusPrefix) + "pair"}) << "nothing in part";
  EXPECT_TRUE(llvm::StringRef(statusOf(*a)).starts_with("refused leader-rev 7\n")) << statusOf(*a);
  EXPECT_NE(statusOf(*a).find("ERR_PLACE_002"), std::string::npos) << statusOf(*a);
  ASSERT_EQ(d.report.refused.size(), 1u);
  EXPECT_NE(d.report.refused[0].find("ERR_PLACE_002"), std::string::npos);
}

TEST(Decide, AContractNoNodeCanHonourIsRefusedWithTheCompilersCode) {
  Cluster cluster({"n1"}, "pinned",
                  "import \"profiles/mlvm.msc\";\ncontract pinned uses profile mlvm_light {\n"
                  "  io_topology { loader { cpu_cores = [100000]; } }\n}\n");
  Decision d = cluster.decideAt();
  const ContractAction *a = actionFor(d, "pinned");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Refuse);
  EXPECT_NE(statusOf(*a).find("error[ERR_"), std::string::npos) << statusOf(*a);
}

TEST(Decide, ANodeLostWaitsOutTheGraceThenTheContractIsPlacedAgainWhole) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.placed();
  cluster.lose("n2"); // its lease expired
  Decision atLoss = cluster.decideAt(10 * kSecond);
  EXPECT_FALSE(actionFor(atLoss, "pair"));
  EXPECT_EQ(atLoss.report.waiting, std::vector<std::string>{"pair"});
  Decision inGrace = cluster.decideAt(12 * kSecond - 1);
  EXPECT_EQ(inGrace.report.waiting, std::vector<std::string>{"pair"});
  Decision after = cluster.decideAt(12 * kSecond);
  const ContractAction *a = actionFor(after, "pair");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  EXPECT_EQ(puts(*a), (std::vector<std::string>{assignmentKey("n1", "pair"), assignmentKey("n3", "pair"),
                                                 std::string(kContractStatusPrefix) + "pair"}));
  EXPECT_EQ(removes(*a), std::vector<std::string>{assignmentKey("n2", "pair")}) << "the lost node's goes";
  EXPECT_EQ(after.report.replaced, std::vector<std::string>{"pair -> n1,n3"});
  EXPECT_TRUE(cluster.memory.lostSinceNs.empty());
}

TEST(Decide, AJobThatCannotBePlacedWholeAgainRunsNowhere) {
  Cluster cluster({"n1", "n2"});
  cluster.placed();
  cluster.lose("n2");
  cluster.decideAt(0);
  Decision after = cluster.decideAt(2 * kSecond);
  const ContractAction *a = actionFor(after, "pair");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Refuse);
  EXPECT_EQ(removes(*a), (std::vector<std::string>{assignmentKey("n1", "pair"), assignmentKey("n2", "pair")}));
  EXPECT_EQ(after.report.released, std::vector<std::string>{"pair"});
}

TEST(Decide, AWithdrawnContractsAssignmentsAndStatusGo) {
  Cluster cluster({"n1", "n2"});
  cluster.placed();
  cluster.store.keys.erase(std::string(kContractsPrefix) + "pair");
  Decision d = cluster.decideAt();
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0].kind, ContractAction::Kind::Withdraw);
  EXPECT_EQ(removes(d.actions[0]), (std::vector<std::string>{assignmentKey("n1", "pair"), assignmentKey("n2", "pair"),
                                                             std::string(kContractStatusPrefix) + "pair"}));
  EXPECT_EQ(d.report.withdrawn, std::vector<std::string>{"pair"});
  EXPECT_TRUE(cluster.memory.compiled.empty()) << "a withdrawn contract's compile is forgotten";
}

// The config in force decides each placement: its scaling defaults fill what the contract leaves
// unset; one that does not read refuses every placement.
TEST(Decide, TheConfigInForceDecidesEachPlacement) {
  Cluster defaults({"n1", "n2"});
  defaults.store.keys[kConfigKey] =
      encodeConfig({"test", "cluster: booster\nscaling: { affinity_policy: numa_first }\n"});
  Decision d = defaults.decideAt();
  const ContractAction *a = actionFor(d, "pair");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  EXPECT_NE(statusOf(*a).find("defaults from "), std::string::npos) << statusOf(*a);
  EXPECT_NE(statusOf(*a).find("affinity_policy = numa_first"), std::string::npos) << statusOf(*a);

  Cluster unreadable({"n1", "n2"});
  unreadable.store.keys[kConfigKey] = "not a published config";
  Decision refused = unreadable.decideAt();
  const ContractAction *r = actionFor(refused, "pair");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, ContractAction::Kind::Refuse);
  EXPECT_NE(statusOf(*r).find("ERR_CLUSTER_010"), std::string::npos) << statusOf(*r);
}

TEST(Decide, ASubmissionIsCompiledOnceWhileItsBytesAreTheSame) {
  Cluster cluster({"n1"}); // waits: one node for two
  cluster.decideAt();
  ASSERT_EQ(cluster.memory.compiled.count("pair"), 1u);
  std::shared_ptr<llvm::SourceMgr> first = cluster.memory.compiled["pair"].sources; // kept: no address reuse
  Decision again = cluster.decideAt(kSecond);
  EXPECT_EQ(cluster.memory.compiled["pair"].sources, first);
  EXPECT_NE(statusOf(*actionFor(again, "pair")).find("ERR_PLACE_002"), std::string::npos);
  cluster.store.contract("pair", std::string(kPair) + "// changed\n");
  cluster.decideAt(2 * kSecond);
  EXPECT_NE(cluster.memory.compiled["pair"].sources, first);
}

TEST(Decide, ASubmissionThatDoesNotCompileIsRefusedWithTheFrontendsCaret) {
  Cluster cluster({"n1"}, "broken", "contract broken uses profile no_such { }\n");
  Decision d = cluster.decideAt();
  const ContractAction *a = actionFor(d, "broken");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Refuse);
  EXPECT_NE(statusOf(*a).find("broken.msc:1:"), std::string::npos) << statusOf(*a);
  EXPECT_NE(statusOf(*a).find("ERR_SEM_002"), std::string::npos) << statusOf(*a);
}

TEST(Decide, AnUnreadableRegistrationIsReportedOncePerValueAndPlacesNothing) {
  Cluster cluster({});
  cluster.store.keys[std::string(kNodesPrefix) + "bad"] = "garbage";
  ClusterState state = cluster.store.read(cluster.memory);
  ASSERT_EQ(state.unreadableNodes.size(), 1u);
  EXPECT_NE(state.unreadableNodes[0].find("ERR_CLUSTER_012"), std::string::npos);
  Decision d = decide(state, cluster.memory, 0, options(), kLeaderRev);
  EXPECT_EQ(actionFor(d, "pair")->kind, ContractAction::Kind::Refuse);
  EXPECT_TRUE(cluster.store.read(cluster.memory).unreadableNodes.empty()) << "the same value again is not news";
}

TEST(Commit, EachActionIsOneFencedTransactionGuardedByItsKindAndARefusalStopsTheRest) {
  Cluster cluster({"n1", "n2"});
  cluster.store.contract("solo", "import \"profiles/mlvm.msc\";\ncontract solo uses profile mlvm_light {\n"
                                 "  io_topology { r0 { gpu = any; } }\n}\n");
  cluster.store.keys[assignmentKey("n1", "gone")] = encodeAssignment({3, "plan", {}, {}});
  Decision d = cluster.decideAt();
  ASSERT_EQ(d.actions.size(), 3u);
  EXPECT_EQ(d.actions[0].kind, ContractAction::Kind::Withdraw);
  std::vector<etcd::Txn> written;
  etcd::Status refused = etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_001, {"test"});
  etcd::Status s = commitActions(d.actions, cluster.store.revision,
                                 [&](const etcd::Txn &txn) -> etcd::Result<etcd::TxnResult> {
                                   written.push_back(txn);
                                   if (written.size() == 2)
                                     return refused; // deposed between two writes
                                   return etcd::TxnResult{};
                                 });
  EXPECT_EQ(s.code, etcd::ErrorCode::ERR_CLUSTER_001);
  ASSERT_EQ(written.size(), 2u) << "nothing is written after the leadership is gone";
  ASSERT_EQ(written[0].compares.size(), 1u);
  EXPECT_EQ(written[0].compares[0].key, std::string(kContractsPrefix) + "gone");
  ASSERT_EQ(written[1].compares.size(), 1u);
  EXPECT_EQ(written[1].compares[0].key, std::string(kContractsPrefix) + "pair");
  EXPECT_EQ(written[1].compares[0].number, cluster.store.revision + 1) << "placed only while the contract is as read";
}

} // namespace msc::cluster
