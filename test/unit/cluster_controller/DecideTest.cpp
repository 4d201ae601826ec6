// What the leading controller decides about a cluster it read, without etcd: the state is built
// from the keys a store would hold (registrations of recorded machines, submissions, assignments,
// the config), time is a number, and the writes are checked before a fake fenced commit.
#include "cluster/controller/Decide.h"
#include "cluster/controller/Reconcile.h"
#include "cluster/controller/Rendezvous.h"
#include "plan/PlanFile.h"

#include "test/unit/RecordedNodes.h"

#include <gtest/gtest.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <set>

namespace msc::cluster {
namespace {

constexpr int64_t kLeaderRev = 7;
constexpr uint64_t kSecond = 1'000'000'000;

const std::string &machineYaml() { return test::recordedNodeYaml(); }

const char *kPair = "import \"profiles/mlvm.msc\";\ncontract pair uses profile mlvm_light {\n  nodes = 2;\n"
                    "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";

// The keys under /mscale/ a store would hold, in key order, at one revision.
struct Store {
  std::map<std::string, std::string> keys;
  std::set<std::string> unleased; // registrations written by hand: under no agent's lease
  int64_t revision = 40;
  void node(const std::string &name, const std::string &address = {}) {
    keys[std::string(kNodesPrefix) + name] = encodeRegistration({"test", machineYaml(), address});
  }
  // A node whose agent publishes `health` with its registration. The store's revision moves on: the
  // leader re-reads a registration when its mod revision changes.
  void node(const std::string &name, const NodeHealth &health) {
    Registration r{"test", machineYaml()};
    r.health = health;
    keys[std::string(kNodesPrefix) + name] = encodeRegistration(r);
    ++revision;
  }
  void cordon(const std::string &node, const std::string &reason) {
    keys[cordonKey(node)] = encodeCordon({"operator", reason, kLeaderRev, 1000});
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
      kv.lease = llvm::StringRef(k).starts_with(kNodesPrefix) && !unleased.count(k) ? 0x51 : 0; // agents' leases
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
  Decision decideAt(uint64_t nowNs = 0) {
    ManualClock clock(nowNs);
    return decide(store.read(memory), memory, clock, options(), kLeaderRev);
  }
  // A round that places `contract`, its assignments then in the store as its agents would find them.
  void placed(const std::string &contract = "pair") {
    Decision d = decideAt();
    for (const char *node : {"n1", "n2", "n3"})
      store.assign(node, contract, d);
  }
  void lose(const std::string &node) { store.keys.erase(std::string(kNodesPrefix) + node); }
  // Every write of `d` as its commit would leave the store.
  void commit(const Decision &d) {
    for (const FaultAction &f : d.faults)
      store.keys[f.op.key] = f.op.value;
    for (const CordonAction &c : d.cordons)
      store.keys.try_emplace(c.op.key, c.op.value); // only while the node has no cordon
    for (const ContractAction &a : d.actions)
      for (const etcd::TxnOp &op : a.ops) {
        if (op.kind == etcd::TxnOp::Kind::Put)
          store.keys[op.key] = op.value;
        else
          store.keys.erase(op.key);
      }
  }
};

const ContractAction *actionFor(const Decision &d, const std::string &contract) {
  auto it = std::find_if(d.actions.begin(), d.actions.end(),
                         [&](const ContractAction &a) { return a.contract == contract; });
  return it == d.actions.end() ? nullptr : &*it;
}

// The assignments and the status an action puts (its event, when it has one, is eventsPut's).
std::vector<std::string> puts(const ContractAction &a) {
  std::vector<std::string> out;
  for (const etcd::TxnOp &op : a.ops)
    if (op.kind == etcd::TxnOp::Kind::Put && !llvm::StringRef(op.key).starts_with(kContractEventsPrefix))
      out.push_back(op.key);
  return out;
}
// The contract's events as `contract`'s action writes them; nullopt when it writes none (or there
// is no such action).
std::optional<std::vector<ContractEvent>> eventsPut(const Decision &d, const std::string &contract = "pair") {
  const ContractAction *found = actionFor(d, contract);
  if (!found) {
    ADD_FAILURE() << "no action for " << contract;
    return std::nullopt;
  }
  const ContractAction &a = *found;
  for (const etcd::TxnOp &op : a.ops)
    if (op.key == std::string(kContractEventsPrefix) + a.contract)
      return op.kind == etcd::TxnOp::Kind::Put ? decodeEvents(op.value) : std::vector<ContractEvent>{};
  return std::nullopt;
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
std::string statusFor(const Decision &d, const std::string &contract) {
  const ContractAction *a = actionFor(d, contract);
  return a ? statusOf(*a) : "(no action for " + contract + ")";
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

std::map<std::string, std::string> environmentPut(const ContractAction &a, const std::string &node) {
  for (const etcd::TxnOp &op : a.ops)
    if (op.key == assignmentKey(node, a.contract)) {
      std::string why;
      std::optional<Assignment> assignment = decodeAssignment(op.value, why);
      EXPECT_TRUE(assignment) << why;
      return assignment ? assignment->environment : std::map<std::string, std::string>{};
    }
  ADD_FAILURE() << "no assignment for " << node;
  return {};
}

std::optional<Assignment> assignmentPut(const ContractAction &a, const std::string &node) {
  for (const etcd::TxnOp &op : a.ops)
    if (op.key == assignmentKey(node, a.contract)) {
      std::string why;
      return decodeAssignment(op.value, why);
    }
  return std::nullopt;
}

// Every rank of a multi-node job gets what torchrun gives: its rank, the world, and where rank 0
// listens (the first node's advertised address) on a port that is fresh at every placement; the
// submission's own values of those names give way.
TEST(Decide, EachRankOfAPlacementLearnsWhereRankZeroListens) {
  Cluster cluster({"n2", "n3"});
  cluster.store.node("n1", "10.0.0.1");
  cluster.store.keys[std::string(kContractsPrefix) + "pair"] =
      encodeSubmission({"pair", kPair, {"/bin/true"}, {{"MASTER_PORT", "1"}, {"EPOCHS", "3"}}});
  Decision first = cluster.decideAt();
  const ContractAction *a = actionFor(first, "pair");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  std::map<std::string, std::string> rank0 = environmentPut(*a, "n1"), rank1 = environmentPut(*a, "n2");
  std::optional<Assignment> survivorBefore = assignmentPut(*a, "n2");
  EXPECT_EQ(rank0["RANK"], "0");
  EXPECT_EQ(rank1["RANK"], "1");
  EXPECT_EQ(rank1["NODE_RANK"], "1");
  EXPECT_EQ(rank1["LOCAL_RANK"], "0");
  EXPECT_EQ(rank1["WORLD_SIZE"], "2");
  EXPECT_EQ(rank1["LOCAL_WORLD_SIZE"], "1");
  EXPECT_EQ(rank0["MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(rank1["MASTER_ADDR"], "10.0.0.1") << "the address rank 0's node advertises";
  EXPECT_EQ(rank0["MASTER_PORT"], rank1["MASTER_PORT"]);
  EXPECT_EQ(rank1["EPOCHS"], "3") << "the submission's other variables stay";
  int port = std::stoi(rank0["MASTER_PORT"]);
  EXPECT_GE(port, kRendezvousPortBase);
  EXPECT_LT(port, kRendezvousPortBase + kRendezvousPorts);

  for (const char *node : {"n1", "n2"})
    cluster.store.assign(node, "pair", first);
  cluster.lose("n1");
  cluster.decideAt(0);
  Decision again = cluster.decideAt(2 * kSecond);
  a = actionFor(again, "pair");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  std::map<std::string, std::string> newRank0 = environmentPut(*a, "n2");
  EXPECT_EQ(newRank0["RANK"], "0");
  EXPECT_EQ(newRank0["MASTER_ADDR"], "n2") << "a node that advertises no address is reached by its name";
  EXPECT_EQ(std::stoi(newRank0["MASTER_PORT"]), port + 1 == kRendezvousPortBase + kRendezvousPorts ? kRendezvousPortBase : port + 1)
      << "a fresh port for the new placement";
  // The survivor's new assignment is its old one placed anew: its agent keeps the contract in place.
  std::optional<Assignment> survivorAfter = assignmentPut(*a, "n2");
  ASSERT_TRUE(survivorBefore && survivorAfter);
  EXPECT_TRUE(samePlacedJob(*survivorBefore, *survivorAfter));
}

// What a placement sets is what an agent takes for placement variables (Keys.h): a survivor's
// assignment differs from its old one in nothing else.
TEST(Decide, EveryVariableAPlacementSetsIsAPlacementVariable) {
  for (const auto &[name, value] : rendezvousEnvironment(1, 3, "10.0.0.1", 29501))
    EXPECT_TRUE(isPlacementVariable(name)) << name;
  ir::WorldSizes sizes;
  sizes.min = 2, sizes.max = 4, sizes.globalBatch = 96, sizes.microBatch = 8, sizes.deterministicReduction = true;
  std::map<std::string, std::string> batch = batchEnvironment(sizes, 3);
  EXPECT_EQ(batch.size(), 5u);
  for (const auto &[name, value] : batch)
    EXPECT_TRUE(isPlacementVariable(name)) << name;
  EXPECT_FALSE(isPlacementVariable("EPOCHS"));
  EXPECT_FALSE(isPlacementVariable("MSCALE_PLAN"));
}

// `deterministic_reduction = true` reaches every rank with its share of the batch, at every size.
TEST(Decide, EveryRankOfAJobAskingForADeterministicReductionIsToldSo) {
  const char *exact = "import \"profiles/mlvm.msc\";\ncontract pair uses profile mlvm_light {\n"
                      "  nodes = 2..3; global_batch = 96 samples; micro_batch = 16 samples;\n"
                      "  deterministic_reduction = true;\n"
                      "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";
  Cluster cluster({"n1", "n2", "n3"}, "pair", exact);
  Decision first = cluster.decideAt();
  const ContractAction *a = actionFor(first, "pair");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  for (const char *node : {"n1", "n2", "n3"}) {
    std::map<std::string, std::string> env = environmentPut(*a, node);
    EXPECT_EQ(env["MSCALE_DETERMINISTIC_REDUCTION"], "1") << node;
    EXPECT_EQ(env["MSCALE_MICRO_BATCH"], "16") << node;
  }
}

// An elastic job (`nodes = 2..3`) runs at the largest size the cluster can give whole: a node lost
// with no spare shrinks it, every rank told the new world size and its share of the same global
// batch; below its fewest it runs nowhere.
TEST(Decide, AnElasticJobShrinksWhenANodeIsLostWithNoSpareAndEachRankLearnsItsShare) {
  const char *elastic = "import \"profiles/mlvm.msc\";\ncontract pair uses profile mlvm_light {\n"
                        "  nodes = 2..3; global_batch = 96 samples; micro_batch = 16 samples;\n"
                        "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";
  Cluster cluster({"n1", "n2", "n3"}, "pair", elastic);
  Decision first = cluster.decideAt();
  const ContractAction *a = actionFor(first, "pair");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  EXPECT_EQ(statusOf(*a), "placed n1,n2,n3 leader-rev 7\nworld size 3\n");
  std::map<std::string, std::string> rank2 = environmentPut(*a, "n3");
  EXPECT_EQ(rank2["RANK"], "2");
  EXPECT_EQ(rank2["WORLD_SIZE"], "3");
  EXPECT_EQ(rank2["MSCALE_GLOBAL_BATCH"], "96");
  EXPECT_EQ(rank2["MSCALE_RANK_BATCH"], "32");
  EXPECT_EQ(rank2["MSCALE_MICRO_BATCH"], "16");
  EXPECT_EQ(rank2["MSCALE_ACCUMULATION_STEPS"], "2");
  EXPECT_FALSE(rank2.count("MSCALE_DETERMINISTIC_REDUCTION")) << "the contract does not ask for it";
  ASSERT_TRUE(eventsPut(first));
  EXPECT_EQ(eventsPut(first)->back().text, "placed on n1,n2,n3 (world size 3 of 2..3)");
  cluster.commit(first);

  cluster.lose("n2");
  cluster.decideAt(10 * kSecond);
  Decision shrunk = cluster.decideAt(12 * kSecond);
  a = actionFor(shrunk, "pair");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->kind, ContractAction::Kind::Place) << statusOf(*a);
  EXPECT_EQ(removes(*a), std::vector<std::string>{assignmentKey("n2", "pair")});
  std::map<std::string, std::string> rank0 = environmentPut(*a, "n1"), rank1 = environmentPut(*a, "n3");
  EXPECT_EQ(rank1["RANK"], "1");
  EXPECT_EQ(rank1["WORLD_SIZE"], "2");
  EXPECT_EQ(rank0["MSCALE_GLOBAL_BATCH"], "96") << "the global batch is the same at every size";
  EXPECT_EQ(rank0["MSCALE_RANK_BATCH"], "48");
  EXPECT_EQ(rank0["MSCALE_ACCUMULATION_STEPS"], "3");
  EXPECT_NE(rank0["MASTER_PORT"], environmentPut(*actionFor(first, "pair"), "n1")["MASTER_PORT"]);
  ASSERT_TRUE(eventsPut(shrunk));
  EXPECT_EQ(eventsPut(shrunk)->back().text,
            "node n2 lost: placed again on n1,n3 (world size 2 of 2..3)");
  EXPECT_EQ(shrunk.report.replaced, std::vector<std::string>{"pair -> n1,n3"});
  cluster.commit(shrunk);

  cluster.lose("n3");
  cluster.decideAt(20 * kSecond);
  Decision below = cluster.decideAt(22 * kSecond);
  a = actionFor(below, "pair");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Refuse);
  EXPECT_NE(statusOf(*a).find("needs at least 2 of 2..3 nodes, only 1 are registered"), std::string::npos)
      << statusOf(*a);
  EXPECT_EQ(below.report.released, std::vector<std::string>{"pair"});
}

// What happened to a contract is kept as its events, stamped by the injected clock's wall time, as
// `kubectl describe` shows them: each placement and refusal once, with the node lost as the cause.
TEST(Decide, EachPlacementAndRefusalIsAnEventSaidOnce) {
  Cluster cluster({"n1"});
  Decision refused = cluster.decideAt(5 * kSecond);
  std::optional<std::vector<ContractEvent>> events = eventsPut(refused);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->back().unixMs, ManualClock(5 * kSecond).unixMs());
  EXPECT_TRUE(llvm::StringRef(events->back().text).starts_with("refused: error[ERR_PLACE_002]")) << events->back().text;
  cluster.commit(refused);
  EXPECT_FALSE(eventsPut(cluster.decideAt(6 * kSecond))) << "the same refusal is no news";

  cluster.store.node("n2");
  cluster.store.node("n3");
  Decision placed = cluster.decideAt(7 * kSecond);
  events = eventsPut(placed);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 2u) << "the earlier events stay";
  EXPECT_EQ(events->back().text, "placed on n1,n2");
  cluster.commit(placed);

  cluster.lose("n2");
  cluster.decideAt(8 * kSecond);
  Decision again = cluster.decideAt(10 * kSecond);
  events = eventsPut(again);
  ASSERT_TRUE(events);
  EXPECT_EQ(events->back().text, "node n2 lost: placed again on n1,n3");
  cluster.commit(again);

  cluster.lose("n3");
  cluster.decideAt(11 * kSecond);
  Decision gone = cluster.decideAt(13 * kSecond);
  events = eventsPut(gone);
  ASSERT_TRUE(events);
  EXPECT_TRUE(llvm::StringRef(events->back().text).starts_with("node n3 lost: refused: error[ERR_PLACE_002]"))
      << events->back().text;
  cluster.commit(gone);

  cluster.store.keys.erase(std::string(kContractsPrefix) + "pair");
  Decision withdrawn = cluster.decideAt(14 * kSecond);
  ASSERT_TRUE(eventsPut(withdrawn));
  EXPECT_TRUE(eventsPut(withdrawn)->empty()) << "a withdrawn contract's events go";
}

TEST(ClusterKeys, EventsKeepTheNewestOnesOneLineEach) {
  std::vector<ContractEvent> events;
  for (int i = 0; i < 30; ++i)
    events.push_back({1000 + i, "event\n" + std::to_string(i)});
  std::vector<ContractEvent> back = decodeEvents(encodeEvents(events));
  ASSERT_EQ(back.size(), kContractEventsKept);
  EXPECT_EQ(back.front().text, "event 10");
  EXPECT_EQ(back.back().unixMs, 1029);
  EXPECT_EQ(decodeEvents("x y\n12 fine\n").size(), 1u) << "a line that does not read is skipped";
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
  ManualClock clock(0);
  Decision d = decide(state, cluster.memory, clock, options(), kLeaderRev);
  EXPECT_EQ(actionFor(d, "pair")->kind, ContractAction::Kind::Refuse);
  EXPECT_TRUE(cluster.store.read(cluster.memory).unreadableNodes.empty()) << "the same value again is not news";
}

const NodeHealth kHot{HealthLevel::Failed,
                      {{"ERR_HEALTH_001", "thermal sensor 'x86_pkg_temp' at 105.0 C is at or above its critical limit "
                                          "100.0 C"}}};
const NodeHealth kWarm{HealthLevel::Degraded,
                       {{"WRN_HEALTH_001", "thermal sensor 'x86_pkg_temp' at 95.0 C is within 10.0 C of its critical "
                                           "limit 100.0 C"}}};

TEST(Decide, ACordonedNodeTakesNoNewPlacementButWhatRunsThereStays) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.placed(); // pair on n1, n2
  cluster.store.cordon("n1", "PSU swap, ticket 4711");
  cluster.store.contract("solo", "import \"profiles/mlvm.msc\";\ncontract solo uses profile mlvm_light {\n  nodes = 1;\n"
                                 "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n");
  Decision d = cluster.decideAt();
  EXPECT_FALSE(actionFor(d, "pair")) << "what runs on a cordoned node stays";
  const ContractAction *solo = actionFor(d, "solo");
  ASSERT_TRUE(solo);
  EXPECT_EQ(statusOf(*solo).substr(0, 10), "placed n2 ") << statusOf(*solo); // n1 fits as well, and comes first
  EXPECT_TRUE(d.cordons.empty()) << "an operator's cordon is the operator's";

  // Nothing else fits: the refusal says which node is cordoned and why.
  Cluster alone({"n1", "n2"});
  alone.store.cordon("n2", "PSU swap, ticket 4711");
  Decision refused = alone.decideAt();
  const ContractAction *pair = actionFor(refused, "pair");
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->kind, ContractAction::Kind::Refuse);
  EXPECT_NE(statusOf(*pair).find("ERR_PLACE_001"), std::string::npos) << statusOf(*pair);
  EXPECT_NE(statusOf(*pair).find("no new placement (cordoned by operator: PSU swap, ticket 4711): n2"), std::string::npos)
      << statusOf(*pair);
}

TEST(Decide, AFailedNodeIsNotPlacedOnADegradedOneIs) {
  Cluster failed({"n1", "n2", "n3"});
  failed.store.node("n1", kHot);
  Decision d = failed.decideAt();
  ASSERT_TRUE(actionFor(d, "pair"));
  EXPECT_EQ(statusFor(d, "pair").substr(0, 16), "placed n2,n3 lea") << statusFor(d, "pair");
  EXPECT_TRUE(d.cordons.empty()) << "no cordon_on in force: not placed, but not cordoned either";

  Cluster degraded({"n1", "n2", "n3"});
  degraded.store.node("n1", kWarm);
  Decision placed = degraded.decideAt();
  EXPECT_EQ(statusFor(placed, "pair").substr(0, 16), "placed n1,n2 lea");

  Cluster two({"n1", "n2"});
  two.store.node("n2", kHot);
  Decision refused = two.decideAt();
  EXPECT_NE(statusFor(refused, "pair").find("no new placement (health failed: ERR_HEALTH_001 thermal sensor"),
            std::string::npos)
      << statusFor(refused, "pair");
}

TEST(Decide, AnUnreadableHealthRecordIsReportedOnceAndTheNodeTakesNothingNew) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.placed(); // pair on n1, n2
  cluster.store.keys[std::string(kNodesPrefix) + "n1"] =
      "# mscale node registration; agent test\n# health overheated\n" + machineYaml();
  ++cluster.store.revision;
  cluster.store.contract("solo", "import \"profiles/mlvm.msc\";\ncontract solo uses profile mlvm_light {\n  nodes = 1;\n"
                                 "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n");
  ClusterState state = cluster.store.read(cluster.memory);
  ASSERT_EQ(state.unreadableHealthNew.size(), 1u);
  EXPECT_EQ(state.unreadableHealthNew[0].rfind("error[ERR_CLUSTER_016]: the health record of node 'n1' cannot be read: "
                                               "'# health overheated' names no verdict",
                                               0),
            0u)
      << state.unreadableHealthNew[0];
  EXPECT_TRUE(state.nodes.at("n1")) << "its topology still reads";
  ManualClock clock(0);
  Decision d = decide(state, cluster.memory, clock, options(), kLeaderRev);
  EXPECT_FALSE(actionFor(d, "pair")) << "what runs there stays: the node is not lost";
  EXPECT_EQ(d.report.unreadableHealth, state.unreadableHealthNew);
  ASSERT_TRUE(actionFor(d, "solo"));
  EXPECT_EQ(statusFor(d, "solo").substr(0, 10), "placed n2 "); // n1 fits as well, and comes first
  EXPECT_TRUE(cluster.store.read(cluster.memory).unreadableHealthNew.empty()) << "the same value again is not news";
}

TEST(Decide, AVerdictUnderNoLeaseCordonsNothingAndTheNodeTakesNothingNew) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.store.keys[kConfigKey] = encodeConfig({"test", "cluster: booster\nhealth: { cordon_on: [failed] }\n"});
  cluster.store.node("n1", kHot);
  cluster.store.unleased.insert(std::string(kNodesPrefix) + "n1"); // written by hand, not by its agent
  ClusterState state = cluster.store.read(cluster.memory);
  ASSERT_EQ(state.unreadableHealthNew.size(), 1u);
  EXPECT_EQ(state.unreadableHealthNew[0],
            "error[ERR_CLUSTER_016]: the health record of node 'n1' cannot be read: its verdict 'failed' is under no "
            "lease, so no agent stands behind it (an agent registers under its lease)");
  ManualClock clock(0);
  Decision d = decide(state, cluster.memory, clock, options(), kLeaderRev);
  EXPECT_TRUE(d.cordons.empty()) << "the policy acts on an agent's verdict only";
  EXPECT_EQ(statusFor(d, "pair").substr(0, 16), "placed n2,n3 lea") << statusFor(d, "pair");
}

TEST(Decide, TheConfigsCordonOnCordonsANodeOnceAndTheCordonOutlivesTheVerdict) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.store.keys[kConfigKey] = encodeConfig({"test", "cluster: booster\nhealth: { cordon_on: [failed] }\n"});
  cluster.store.node("n1", kHot);
  ManualClock clock(0, 1764950400000000); // monotonic 0, wall time in µs
  Decision d = decide(cluster.store.read(cluster.memory), cluster.memory, clock, options(), kLeaderRev);
  ASSERT_EQ(d.cordons.size(), 1u);
  EXPECT_EQ(d.cordons[0].node, "n1");
  EXPECT_EQ(d.cordons[0].op.key, cordonKey("n1"));
  std::string why;
  std::optional<Cordon> c = decodeCordon(d.cordons[0].op.value, why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->by, "policy");
  EXPECT_EQ(c->leaderRevision, kLeaderRev);
  EXPECT_EQ(c->sinceUnixMs, 1764950400000);
  EXPECT_EQ(c->reason.rfind("health failed: ERR_HEALTH_001 thermal sensor 'x86_pkg_temp' at 105.0 C", 0), 0u) << c->reason;
  EXPECT_EQ(d.report.cordoned.size(), 1u);
  EXPECT_EQ(statusFor(d, "pair").substr(0, 16), "placed n2,n3 lea");
  cluster.commit(d);
  // The next round finds the cordon: nothing to write. The verdict clears; the cordon stays.
  cluster.store.node("n1", NodeHealth{});
  Decision next = cluster.decideAt();
  EXPECT_TRUE(next.cordons.empty());
  // A degraded node is not cordoned unless the config says so.
  cluster.store.node("n2", kWarm);
  EXPECT_TRUE(cluster.decideAt().cordons.empty());
}

// What n1's agent says of pair's workers there: `faults` so far, the last one's words.
void workerFaultsSaid(Store &store, int64_t faults, int64_t leaderRevision = kLeaderRev) {
  AssignmentStatus s;
  s.state = "applied";
  s.leaderRevision = leaderRevision;
  s.worker = "running";
  s.pid = 4242;
  s.faults = faults;
  s.lastFault = "worker-crashed at step " + std::to_string(10 * faults) + " (SIGKILL)";
  store.keys[statusKey("n1", "pair")] = encodeStatus(s);
  ++store.revision;
}

std::vector<NodeFault> historyPut(const Decision &d, const std::string &node) {
  for (const FaultAction &f : d.faults)
    if (f.node == node) {
      EXPECT_EQ(f.op.key, nodeFaultsKey(node));
      std::string why;
      std::optional<std::vector<NodeFault>> h = decodeFaults(f.op.value, why);
      EXPECT_TRUE(h) << why;
      return h ? *h : std::vector<NodeFault>{};
    }
  return {};
}

constexpr uint64_t kWallUs = 1764950400000000; // 2025-12-05, in µs
constexpr uint64_t kMinuteUs = 60'000'000;

TEST(Decide, AWorkerFaultIsRecordedOnceOnItsNodeAndAFailoverAddsNothing) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.placed(); // pair on n1, n2
  workerFaultsSaid(cluster.store, 1);
  ManualClock clock(0, kWallUs);
  Decision d = decide(cluster.store.read(cluster.memory), cluster.memory, clock, options(), kLeaderRev);
  ASSERT_EQ(d.faults.size(), 1u);
  EXPECT_EQ(d.faults[0].readModRevision, 0) << "a node without a history: written only while it has none";
  EXPECT_EQ(historyPut(d, "n1"),
            (std::vector<NodeFault>{{int64_t(kWallUs / 1000), "worker:pair:7:1", "pair: worker-crashed at step 10 (SIGKILL)"}}));
  EXPECT_EQ(d.report.faults, std::vector<std::string>{"n1: pair: worker-crashed at step 10 (SIGKILL) (worker:pair:7:1)"});
  EXPECT_TRUE(d.cordons.empty()) << "no lemon rule in force";
  cluster.commit(d);

  EXPECT_TRUE(cluster.decideAt().faults.empty()) << "recorded: not again";
  ReconcileMemory fresh; // a new leader reads the same statuses
  ManualClock later(0, kWallUs + kMinuteUs);
  EXPECT_TRUE(decide(cluster.store.read(fresh), fresh, later, options(), kLeaderRev).faults.empty());

  // Two more, seen at once: both are added, the history as read is the guard.
  workerFaultsSaid(cluster.store, 3);
  Decision more = decide(cluster.store.read(cluster.memory), cluster.memory, later, options(), kLeaderRev);
  ASSERT_EQ(more.faults.size(), 1u);
  EXPECT_EQ(more.faults[0].readModRevision, cluster.store.revision);
  std::vector<NodeFault> h = historyPut(more, "n1");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[1].id, "worker:pair:7:2");
  EXPECT_EQ(h[1].text, "pair: worker fault 2 of its assignment") << "the agent says the last fault's words only";
  EXPECT_EQ(h[2].text, "pair: worker-crashed at step 30 (SIGKILL)");

  // The status of an assignment replaced since (another leader revision) counts for nothing.
  Cluster replaced({"n1", "n2", "n3"});
  replaced.placed();
  workerFaultsSaid(replaced.store, 2, kLeaderRev - 2);
  EXPECT_TRUE(replaced.decideAt().faults.empty());
}

TEST(Decide, TheLemonRuleCordonsANodeAtItsNthFaultWithinTheWindowAndNotBefore) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.store.keys[kConfigKey] =
      encodeConfig({"test", "cluster: booster\nhealth: { lemon: { faults: 3, within: 1h } }\n"});
  cluster.placed(); // pair on n1, n2
  auto round = [&](int64_t faults, uint64_t wallUs) {
    workerFaultsSaid(cluster.store, faults);
    ManualClock clock(0, wallUs);
    Decision d = decide(cluster.store.read(cluster.memory), cluster.memory, clock, options(), kLeaderRev);
    cluster.commit(d);
    return d;
  };
  EXPECT_TRUE(round(1, kWallUs).cordons.empty());
  EXPECT_TRUE(round(2, kWallUs + 70 * kMinuteUs).cordons.empty()) << "the first is out of the window by now";
  EXPECT_TRUE(round(3, kWallUs + 80 * kMinuteUs).cordons.empty()) << "two within the hour";
  Decision third = round(4, kWallUs + 90 * kMinuteUs);
  ASSERT_EQ(third.cordons.size(), 1u);
  EXPECT_EQ(third.cordons[0].node, "n1");
  std::string why;
  std::optional<Cordon> c = decodeCordon(third.cordons[0].op.value, why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->by, "policy");
  EXPECT_EQ(c->reason, "lemon: 3 faults within 1h: pair: worker-crashed at step 20 (SIGKILL); pair: worker-crashed at "
                       "step 30 (SIGKILL); pair: worker-crashed at step 40 (SIGKILL)");
  EXPECT_EQ(third.report.cordoned, std::vector<std::string>{"n1: " + c->reason});
  EXPECT_FALSE(actionFor(third, "pair")) << "what runs on a lemon stays; only new placements avoid it";
  EXPECT_TRUE(round(4, kWallUs + 91 * kMinuteUs).cordons.empty()) << "cordoned once";

  // Uncordoned after a repair (Uncordon marks the history): the rule counts from there, so the
  // node is not cordoned again at once, nor at its next fault, but at the third after the mark.
  cluster.store.keys.erase(cordonKey("n1"));
  std::string why2;
  std::vector<NodeFault> history = *decodeFaults(cluster.store.keys.at(nodeFaultsKey("n1")), why2);
  history.push_back({int64_t((kWallUs + 92 * kMinuteUs) / 1000), "uncordoned:7:50", "uncordoned by an operator"});
  cluster.store.keys[nodeFaultsKey("n1")] = encodeFaults(history);
  EXPECT_TRUE(round(4, kWallUs + 93 * kMinuteUs).cordons.empty()) << "the faults before the uncordon are judged";
  EXPECT_TRUE(round(5, kWallUs + 94 * kMinuteUs).cordons.empty());
  EXPECT_TRUE(round(6, kWallUs + 95 * kMinuteUs).cordons.empty());
  Decision again = round(7, kWallUs + 96 * kMinuteUs);
  ASSERT_EQ(again.cordons.size(), 1u);
  EXPECT_NE(again.cordons[0].op.value.find("step 50 (SIGKILL); pair: worker-crashed at step 60 (SIGKILL); pair: "
                                           "worker-crashed at step 70"),
            std::string::npos)
      << again.cordons[0].op.value;
}

TEST(Decide, ANodeLostUnderAContractIsAFaultOnceTheContractIsPlacedAgain) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.placed(); // pair on n1, n2
  cluster.lose("n2");
  EXPECT_TRUE(cluster.decideAt(10 * kSecond).faults.empty()) << "within the grace it may come back";
  Decision after = cluster.decideAt(12 * kSecond);
  std::vector<NodeFault> h = historyPut(after, "n2");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].id, "lost:pair:7:40"); // the assignment's revision: the store's here
  EXPECT_EQ(h[0].text, "pair: node lost (its workers with it)");
  EXPECT_TRUE(historyPut(after, "n1").empty());
  cluster.commit(after);
  // The history is the machine's: it stays while the node is away, and counts when it is back.
  EXPECT_TRUE(cluster.store.keys.count(nodeFaultsKey("n2")));
}

// The same node lost again under a later placement by the same leader is another fault: a node
// that keeps being lost under one long job must reach the lemon rule.
TEST(Decide, ANodeLostAgainUnderALaterPlacementIsAnotherFault) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.commit(cluster.decideAt(0)); // pair on two of the three
  auto lostNodeOfPair = [&]() {
    for (const char *n : {"n1", "n2", "n3"})
      if (cluster.store.keys.count(assignmentKey(n, "pair")))
        return std::string(n);
    return std::string();
  };
  std::string first = lostNodeOfPair();
  cluster.lose(first);
  ++cluster.store.revision;
  cluster.decideAt(10 * kSecond);
  Decision moved = cluster.decideAt(13 * kSecond); // placed again on the two left
  ASSERT_EQ(historyPut(moved, first).size(), 1u);
  cluster.commit(moved);
  cluster.store.node(first); // back, and the next loss of the new placement takes it again
  ++cluster.store.revision;
  for (const char *n : {"n1", "n2", "n3"})
    if (n != first && cluster.store.keys.count(assignmentKey(n, "pair"))) {
      cluster.lose(n);
      break;
    }
  ++cluster.store.revision;
  cluster.decideAt(20 * kSecond);
  Decision again = cluster.decideAt(23 * kSecond);
  cluster.commit(again);
  ASSERT_TRUE(cluster.store.keys.count(assignmentKey(first, "pair"))) << "placed on the node that came back";
  cluster.lose(first);
  ++cluster.store.revision;
  cluster.decideAt(30 * kSecond);
  Decision third = cluster.decideAt(33 * kSecond);
  std::vector<NodeFault> h = historyPut(third, first);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_NE(h[0].id, h[1].id);
  EXPECT_EQ(h[1].id.rfind("lost:pair:7:", 0), 0u) << h[1].id;
}

TEST(Decide, AnUnreadableFaultHistoryIsReportedOnceAndNotOverwritten) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.store.keys[kConfigKey] =
      encodeConfig({"test", "cluster: booster\nhealth: { lemon: { faults: 1, within: 1h } }\n"});
  cluster.placed();
  cluster.store.keys[nodeFaultsKey("n1")] = "1764950400000 worker:pair:7:1 pair: crashed\nyesterday twice\n";
  workerFaultsSaid(cluster.store, 2);
  ClusterState state = cluster.store.read(cluster.memory);
  ASSERT_EQ(state.unreadableFaultsNew.size(), 1u);
  EXPECT_EQ(state.unreadableFaultsNew[0], "error[ERR_CLUSTER_019]: the fault history of node 'n1' cannot be read: the "
                                          "line 'yesterday twice' is not 'UNIX_MS ID TEXT'");
  ManualClock clock(0, kWallUs);
  Decision d = decide(state, cluster.memory, clock, options(), kLeaderRev);
  EXPECT_TRUE(d.faults.empty()) << "what it holds would be lost";
  EXPECT_TRUE(d.cordons.empty()) << "no verdict on evidence that does not read";
  EXPECT_EQ(d.report.unreadableFaults, state.unreadableFaultsNew);
  EXPECT_TRUE(cluster.store.read(cluster.memory).unreadableFaultsNew.empty()) << "the same value again is not news";
}

TEST(Decide, AnUnreadableDrainRecordIsReportedOnceAndMovesNothing) {
  Cluster cluster({"n1", "n2", "n3"});
  cluster.placed(); // pair on two of the three nodes
  const std::string node = "n1";
  cluster.store.keys[cordonKey(node)] = encodeCordon({"operator", "drained", kLeaderRev, 1000});
  cluster.store.keys[drainKey(node)] = "leader-rev 7\nsince-ms 1000\ndeadline-ms soon\nforce no\nstate draining\n";
  ClusterState state = cluster.store.read(cluster.memory);
  ASSERT_EQ(state.unreadableDrainsNew.size(), 1u);
  EXPECT_EQ(state.unreadableDrainsNew[0], "error[ERR_CLUSTER_021]: the drain record of node 'n1' cannot be read: the "
                                          "line 'deadline-ms soon' does not read");
  ManualClock clock(0, kWallUs);
  Decision d = decide(state, cluster.memory, clock, options(), kLeaderRev);
  EXPECT_EQ(d.report.unreadableDrains, state.unreadableDrainsNew);
  EXPECT_TRUE(d.drains.empty()) << "a record that does not read is not rewritten";
  for (const ContractAction &a : d.actions)
    EXPECT_NE(a.kind, ContractAction::Kind::Stop) << "nothing is asked to stop by a drain that does not read";
  EXPECT_TRUE(cluster.store.read(cluster.memory).unreadableDrainsNew.empty()) << "the same value again is not news";
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
