// `mscale-cli cluster status` and `cluster nodes` as a person reads them: why a contract was refused,
// what happened to it, what each node made of it, which nodes are not ready and what they hold.
#include "cluster/controller/Decide.h"
#include "cluster/status/ClusterStatus.h"

#include "test/unit/RecordedNodes.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

namespace msc::cluster {
namespace {

const std::string &machineYaml() { return test::recordedNodeYaml(); }

std::string contract(const std::string &name, unsigned nodes) {
  return "import \"profiles/mlvm.msc\";\ncontract " + name + " uses profile mlvm_light {\n  nodes = " +
         std::to_string(nodes) + ";\n  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";
}

// A store the leader has decided on: the keys its decisions left.
struct Store {
  std::map<std::string, std::string> keys;
  std::set<std::string> unleased; // registrations written by hand: under no agent's lease
  ReconcileMemory memory;
  std::vector<etcd::KeyValue> kvs() const {
    std::vector<etcd::KeyValue> out;
    for (const auto &[k, v] : keys) {
      etcd::KeyValue kv;
      kv.key = k, kv.value = v, kv.modRevision = 1;
      bool agents = llvm::StringRef(k).starts_with(kNodesPrefix) || llvm::StringRef(k).starts_with(kLendingPrefix);
      kv.lease = agents && !unleased.count(k) ? 0x51 : 0; // agents' leases
      out.push_back(kv);
    }
    return out;
  }
  void decide(uint64_t nowNs) {
    ReconcileOptions o;
    o.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
    o.compilerVersion = "test";
    ManualClock clock(nowNs);
    Decision d = cluster::decide(clusterStateFrom(kvs(), 1, memory), memory, clock, o, 7);
    for (const ContractAction &a : d.actions)
      for (const etcd::TxnOp &op : a.ops)
        if (op.kind == etcd::TxnOp::Kind::Put)
          keys[op.key] = op.value;
        else
          keys.erase(op.key);
  }
};

TEST(ClusterStatus, SaysWhyAContractWasRefusedWhatHappenedAndWhatEachNodeDid) {
  Store s;
  for (const char *n : {"n1", "n2"})
    s.keys[std::string(kNodesPrefix) + n] = encodeRegistration({"0.9", machineYaml(), "10.0.0.1"});
  s.keys[std::string(kContractsPrefix) + "pair"] = encodeSubmission({"pair", contract("pair", 2), {"/bin/true"}, {}});
  s.keys[std::string(kContractsPrefix) + "big"] = encodeSubmission({"big", contract("big", 5), {"/bin/true"}, {}});
  s.decide(1'000'000'000);
  AssignmentStatus crashed{"applied", "", 7, "exited", 4242, 1, {"fault worker-crashed at step 30 (exit 1: RuntimeError: loss is nan)"}};
  s.keys[statusKey("n1", "pair")] = encodeStatus(crashed);
  s.keys[std::string(kContractsPrefix) + "later"] = encodeSubmission({"later", contract("later", 1), {}, {}});

  ClusterStatusView view = statusOf(s.kvs());
  ASSERT_EQ(view.contracts.size(), 3u);
  const ContractView &big = view.contracts[0], &later = view.contracts[1], &pair = view.contracts[2];
  EXPECT_EQ(big.decision, "refused");
  ASSERT_FALSE(big.diagnostics.empty()) << "the reason is shown, not only kept in etcd";
  EXPECT_NE(big.diagnostics.front().find("error[ERR_PLACE_002]"), std::string::npos) << big.diagnostics.front();
  ASSERT_EQ(big.events.size(), 1u);
  EXPECT_EQ(big.events[0].text.rfind("refused: error[ERR_PLACE_002]", 0), 0u) << big.events[0].text;
  EXPECT_EQ(later.decision, "pending");
  EXPECT_EQ(pair.decision, "placed");
  EXPECT_EQ(pair.nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(pair.leaderRevision, 7);
  ASSERT_EQ(pair.onNodes.size(), 2u);
  ASSERT_TRUE(pair.onNodes[0].status);
  EXPECT_EQ(pair.onNodes[0].status->exitStatus, 1);
  EXPECT_FALSE(pair.onNodes[1].status);

  std::string text;
  llvm::raw_string_ostream os(text);
  EXPECT_TRUE(printContracts(view, "big", os));
  EXPECT_NE(text.find("contract big: refused leader-rev 7\n  why:\n    big.msc:2:10: error[ERR_PLACE_002]"), std::string::npos) << text;
  EXPECT_NE(text.find("  events:\n    20"), std::string::npos) << text;
  text.clear();
  printContracts(view, "pair", os);
  EXPECT_NE(text.find("  node n1: applied, worker exited (pid 4242), exit status 1\n"
                      "    fault worker-crashed at step 30 (exit 1: RuntimeError: loss is nan)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  node n2: no status yet\n"), std::string::npos) << text;
  EXPECT_FALSE(printContracts(view, "nope", os));
  llvm::json::Value json = contractsJson(view, "pair");
  const llvm::json::Array *contracts = json.getAsObject()->getArray("contracts");
  ASSERT_TRUE(contracts && contracts->size() == 1);
  EXPECT_EQ(*(*contracts)[0].getAsObject()->getString("decision"), "placed");
}

TEST(ClusterStatus, ALostNodeIsNotReadyWhileItHoldsAssignmentsAndNodesShowWhatIsUsed) {
  Store s;
  for (const char *n : {"n1", "n2", "n3"})
    s.keys[std::string(kNodesPrefix) + n] = encodeRegistration({"0.9", machineYaml()});
  s.keys[std::string(kContractsPrefix) + "pair"] = encodeSubmission({"pair", contract("pair", 2), {"/bin/true"}, {}});
  s.decide(1'000'000'000);
  s.keys.erase(std::string(kNodesPrefix) + "n2"); // its lease expired; the leader waits out the grace

  ClusterStatusView view = statusOf(s.kvs());
  ASSERT_EQ(view.nodes.size(), 3u);
  const NodeView &n1 = view.nodes[0], &n2 = view.nodes[1], &n3 = view.nodes[2];
  EXPECT_TRUE(n1.ready);
  EXPECT_EQ(n1.gpus, 4u);
  EXPECT_EQ(n1.gpusUsed, 1u) << "the pair's plan holds one GPU there";
  EXPECT_GT(n1.cores, 0u);
  EXPECT_EQ(n1.contracts, std::vector<std::string>{"pair"});
  EXPECT_FALSE(n2.ready) << "a lost node is marked, not dropped";
  EXPECT_NE(n2.notReady.find("registration is gone"), std::string::npos);
  EXPECT_EQ(n2.contracts, std::vector<std::string>{"pair"});
  EXPECT_TRUE(n3.ready);
  EXPECT_EQ(n3.gpusUsed, 0u);

  std::string text;
  llvm::raw_string_ostream os(text);
  printNodes(view, os);
  EXPECT_EQ(text.rfind("NODE", 0), 0u) << text;
  EXPECT_NE(text.find("n2    NotReady"), std::string::npos) << text;
  llvm::json::Value json = nodesJson(view);
  const llvm::json::Object *first = (*json.getAsObject()->getArray("nodes"))[0].getAsObject();
  EXPECT_EQ(*first->getObject("gpus")->getInteger("free"), 3);
}

TEST(ClusterStatus, ARanksOutputIsReadFromTheNodeThatRunsIt) {
  Store s;
  s.keys[std::string(kNodesPrefix) + "n1"] = encodeRegistration({"0.9", machineYaml(), "10.0.0.1", "10.0.0.1:41001"});
  s.keys[std::string(kNodesPrefix) + "n2"] = encodeRegistration({"0.9", machineYaml(), "10.0.0.2", "10.0.0.2:41002"});
  s.keys[std::string(kNodesPrefix) + "n3"] = encodeRegistration({"0.9", machineYaml(), "10.0.0.3"});
  s.keys[std::string(kContractsPrefix) + "pair"] = encodeSubmission({"pair", contract("pair", 2), {"/bin/true"}, {}});
  s.keys[std::string(kContractsPrefix) + "big"] = encodeSubmission({"big", contract("big", 5), {"/bin/true"}, {}});
  s.decide(1'000'000'000);
  ClusterStatusView view = statusOf(s.kvs());
  const ContractView &pair = *std::find_if(view.contracts.begin(), view.contracts.end(),
                                           [](const ContractView &c) { return c.name == "pair"; });
  ASSERT_EQ(pair.nodes.size(), 2u);
  std::string why;
  for (unsigned rank : {0u, 1u}) {
    std::optional<RankOutput> out = rankOutputOf(view, "pair", rank, why);
    const NodeView &node = *std::find_if(view.nodes.begin(), view.nodes.end(),
                                         [&](const NodeView &n) { return n.name == pair.nodes[rank]; });
    if (node.http.empty()) { // n3 advertises none
      EXPECT_FALSE(out);
      EXPECT_NE(why.find("serves no HTTP endpoint"), std::string::npos) << why;
      continue;
    }
    ASSERT_TRUE(out) << why;
    EXPECT_EQ(out->node, pair.nodes[rank]);
    EXPECT_EQ(out->http, node.http);
  }
  EXPECT_FALSE(rankOutputOf(view, "pair", 2, why));
  EXPECT_NE(why.find("the job has 2 rank(s), on "), std::string::npos) << why;
  EXPECT_FALSE(rankOutputOf(view, "big", 0, why));
  EXPECT_NE(why.find("it is not placed (refused;"), std::string::npos) << why;
  EXPECT_FALSE(rankOutputOf(view, "nosuch", 0, why));
  EXPECT_EQ(why, "no such contract is submitted or decided");

  s.keys.erase(std::string(kNodesPrefix) + pair.nodes[1]); // its agent is gone
  view = statusOf(s.kvs());
  EXPECT_FALSE(rankOutputOf(view, "pair", 1, why));
  EXPECT_NE(why.find("is not ready (its registration is gone"), std::string::npos) << why;
}

} // namespace
} // namespace msc::cluster

namespace msc::cluster {
namespace {

TEST(ClusterStatus, AVerdictUnderNoLeaseIsNotTaken) {
  Store s;
  Registration hot{"0.9", machineYaml()};
  hot.health = NodeHealth{HealthLevel::Failed, {{"ERR_HEALTH_001", "made up"}}};
  s.keys[std::string(kNodesPrefix) + "n1"] = encodeRegistration(hot);
  s.unleased.insert(std::string(kNodesPrefix) + "n1");
  ClusterStatusView view = statusOf(s.kvs());
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].health, "unreadable");
  EXPECT_EQ(view.nodes[0].healthUnreadable,
            "its verdict 'failed' is under no lease, so no agent stands behind it (an agent registers under its lease)");
  EXPECT_TRUE(view.nodes[0].ready) << "its topology reads";
}

TEST(ClusterStatus, NodesShowTheirHealthAndWhetherTheyAreCordonedAndWhy) {
  Store s;
  Registration hot{"0.9", machineYaml()};
  hot.health = NodeHealth{HealthLevel::Failed, {{"ERR_HEALTH_001", "thermal sensor 'x86_pkg_temp' at 105.0 C is at or "
                                                                   "above its critical limit 100.0 C"}}};
  s.keys[std::string(kNodesPrefix) + "n1"] = encodeRegistration(hot);
  s.keys[std::string(kNodesPrefix) + "n2"] = encodeRegistration({"0.9", machineYaml()});
  s.keys[std::string(kNodesPrefix) + "n3"] =
      "# mscale node registration; agent 0.9\n# health overheated\n" + machineYaml();
  s.keys[cordonKey("n1")] = encodeCordon({"policy", "health failed: ERR_HEALTH_001 thermal sensor", 7, 1000});
  s.keys[cordonKey("n9")] = encodeCordon({"operator", "out for repair", 7, 1000}); // its agent is stopped

  ClusterStatusView view = statusOf(s.kvs());
  ASSERT_EQ(view.nodes.size(), 4u);
  const NodeView &n1 = view.nodes[0], &n2 = view.nodes[1], &n3 = view.nodes[2], &n9 = view.nodes[3];
  EXPECT_EQ(n1.health, "failed");
  ASSERT_EQ(n1.healthReasons.size(), 1u);
  EXPECT_EQ(n1.healthReasons[0].code, "ERR_HEALTH_001");
  ASSERT_TRUE(n1.cordon);
  EXPECT_EQ(n1.cordon->by, "policy");
  EXPECT_EQ(n2.health, "unknown") << "an agent that publishes no verdict";
  EXPECT_FALSE(n2.cordon);
  EXPECT_EQ(n3.health, "unreadable");
  EXPECT_NE(n3.healthUnreadable.find("names no verdict"), std::string::npos);
  EXPECT_TRUE(n3.ready) << "its topology reads";
  EXPECT_FALSE(n9.ready);
  ASSERT_TRUE(n9.cordon) << "a cordon outlives the node's agent";

  std::string text;
  llvm::raw_string_ostream os(text);
  printNodes(view, os);
  // Each row's words, as `awk` sees them: NODE STATUS HEALTH GPUS ...
  auto words = [&](const std::string &node) {
    std::vector<std::string> out;
    size_t at = text.find("\n" + node + " ");
    std::istringstream line(at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1));
    for (std::string w; line >> w;)
      out.push_back(w);
    return out;
  };
  EXPECT_EQ(text.rfind("NODE  STATUS", 0), 0u) << text;
  ASSERT_GE(words("n1").size(), 3u) << text;
  EXPECT_EQ(words("n1")[1], "Ready,Cordoned");
  EXPECT_EQ(words("n1")[2], "failed:ERR_HEALTH_001");
  EXPECT_NE(text.find("(cordoned by policy: health failed: ERR_HEALTH_001 thermal sensor)"), std::string::npos) << text;
  EXPECT_EQ(words("n2")[1], "Ready");
  EXPECT_EQ(words("n2")[2], "unknown");
  EXPECT_EQ(words("n3")[2], "unreadable");
  EXPECT_EQ(words("n9")[1], "NotReady,Cordoned");
  EXPECT_NE(text.find("(cordoned by operator: out for repair)"), std::string::npos) << text;

  llvm::json::Value json = nodesJson(view);
  const llvm::json::Object *first = (*json.getAsObject()->getArray("nodes"))[0].getAsObject();
  EXPECT_EQ(first->getBoolean("cordoned"), true);
  EXPECT_EQ(*first->getObject("cordon")->getString("by"), "policy");
  EXPECT_EQ(*first->getObject("health")->getString("verdict"), "failed");
  EXPECT_EQ(*(*first->getObject("health")->getArray("reasons"))[0].getAsObject()->getString("code"), "ERR_HEALTH_001");
  const llvm::json::Object *second = (*json.getAsObject()->getArray("nodes"))[1].getAsObject();
  EXPECT_EQ(second->getBoolean("cordoned"), false);
}

TEST(ClusterStatus, NodesShowWhatTheirOwnersLend) {
  Store s;
  for (const char *n : {"n1", "n2", "n3", "n4", "n5"})
    s.keys[std::string(kNodesPrefix) + n] = encodeRegistration({"0.9", machineYaml()});
  s.keys[lendingKey("n1")] = encodeLending({1, 2, 0, 640, 1});
  s.keys[lendingKey("n2")] = encodeLending({2, 6, 3, 1000, 0, 2, 400, 1, 250, 0});
  s.keys[lendingKey("n3")] = encodeLending({});
  s.keys[lendingKey("n4")] = "owners 1\ncpus 2\n";
  s.keys[lendingKey("n5")] = encodeLending({1, 2, 0, 500, 0});
  s.unleased.insert(lendingKey("n5"));
  ClusterStatusView view = statusOf(s.kvs());
  std::string text;
  llvm::raw_string_ostream os(text);
  printNodes(view, os);
  auto lends = [&](const std::string &node) { // the LENDS column, the 13th word
    size_t at = text.find("\n" + node + " ");
    std::istringstream line(at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1));
    std::vector<std::string> words;
    for (std::string w; line >> w;)
      words.push_back(w);
    return words.size() > 12 ? words[12] : std::string();
  };
  EXPECT_NE(text.find("  ADDRESS  LENDS "), std::string::npos) << text;
  EXPECT_EQ(lends("n1"), "2cpu@64%");
  EXPECT_EQ(lends("n2"), "6cpu@100%+3gpu@40%+2qp@25%");
  EXPECT_EQ(lends("n3"), "-");
  EXPECT_EQ(lends("n4"), "unreadable");
  EXPECT_EQ(lends("n5"), "unreadable");
  EXPECT_EQ(view.nodes[4].lendingUnreadable, "it is under no lease");
  llvm::json::Value json = nodesJson(view);
  const llvm::json::Object *n1 = (*json.getAsObject()->getArray("nodes"))[0].getAsObject();
  const llvm::json::Object *lending = n1->getObject("lending");
  ASSERT_TRUE(lending);
  EXPECT_EQ(lending->getInteger("cpus"), 2);
  EXPECT_EQ(lending->getInteger("share_permille"), 640);
  EXPECT_EQ(lending->getInteger("lent_cpus"), 1);
  const llvm::json::Object *n2 = (*json.getAsObject()->getArray("nodes"))[1].getAsObject()->getObject("lending");
  ASSERT_TRUE(n2);
  EXPECT_EQ(n2->getInteger("gpu_share_permille"), 400);
  EXPECT_EQ(n2->getInteger("lent_gpu_units"), 1);
  EXPECT_EQ(n2->getInteger("rdma_queue_pairs"), 2);
  EXPECT_EQ(n2->getInteger("rdma_share_permille"), 250);
  EXPECT_EQ(n2->getInteger("lent_queue_pairs"), 0);
}

TEST(ClusterStatus, NodesShowTheirDrainAndADrainWaitsForTheJobsStillThere) {
  Store s;
  for (const char *n : {"n1", "n2", "n3"})
    s.keys[std::string(kNodesPrefix) + n] = encodeRegistration({"0.9", machineYaml()});
  s.keys[std::string(kContractsPrefix) + "two"] = encodeSubmission({"two", contract("two", 2), {"train"}, {}});
  s.keys[std::string(kContractsPrefix) + "one"] = encodeSubmission({"one", contract("one", 1), {"train"}, {}});
  s.decide(1'000'000'000);
  ClusterStatusView view = statusOf(s.kvs());
  auto placedOn = [&](const std::string &name) {
    for (const ContractView &c : view.contracts)
      if (c.name == name)
        return c.nodes;
    return std::vector<std::string>{};
  };
  ASSERT_EQ(placedOn("two").size(), 2u);
  const std::string node = placedOn("two").front();
  // The jobs a drain waits for: those still placed on the node, in the order asked; a job not
  // there (or withdrawn, or never submitted) is not waited for.
  std::vector<std::string> expected = {"two"};
  if (placedOn("one").front() == node)
    expected = {"one", "two"};
  EXPECT_EQ(jobsStillOn(view, node, {"one", "two", "gone"}), expected);

  s.keys[cordonKey(node)] = encodeCordon({"operator", "drained", 7, 1000});
  s.keys[drainKey(node)] = encodeDrain({7, 1000, 61000, false, false});
  s.keys[drainKey("n9")] = "state paused\n"; // a record that does not read, of a node that is gone
  view = statusOf(s.kvs());
  std::string text;
  llvm::raw_string_ostream os(text);
  printNodes(view, os);
  auto statusWord = [&](const std::string &name) { // the STATUS column, as `awk '{print $2}'` sees it
    size_t at = text.find("\n" + name + " ");
    std::istringstream line(at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1));
    std::string first, second;
    line >> first >> second;
    return second;
  };
  EXPECT_EQ(statusWord(node), "Ready,Cordoned,Draining") << text;
  EXPECT_EQ(statusWord("n9"), "NotReady,DrainUnreadable") << text;
  llvm::json::Value json = nodesJson(view);
  for (const llvm::json::Value &v : *json.getAsObject()->getArray("nodes")) {
    const llvm::json::Object *o = v.getAsObject();
    if (*o->getString("name") == node) {
      ASSERT_TRUE(o->getObject("drain"));
      EXPECT_EQ(*o->getObject("drain")->getString("state"), "draining");
      EXPECT_EQ(o->getObject("drain")->getInteger("deadline_unix_ms"), 61000);
      EXPECT_EQ(o->getObject("drain")->getInteger("id"), 1) << "the record's revision";
    } else if (*o->getString("name") == "n9") {
      EXPECT_EQ(*o->getObject("drain")->getString("state"), "unreadable");
    } else {
      EXPECT_FALSE(o->getObject("drain"));
    }
  }
  s.keys[drainKey(node)] = encodeDrain({7, 1000, 61000, false, true});
  text.clear();
  printNodes(statusOf(s.kvs()), os);
  EXPECT_EQ(statusWord(node), "Ready,Cordoned,DrainTimedOut") << text;
}

} // namespace
} // namespace msc::cluster
