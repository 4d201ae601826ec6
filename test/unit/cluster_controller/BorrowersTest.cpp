// Borrowers across the cluster (cluster/controller/Borrowers.h), decided round by round from
// cluster states built in memory: the agents' lending records are written as the agents would
// write them, the leader places borrowers where lent capacity is, moves them when a loan is taken
// back for good, and places guaranteed jobs as if no borrower existed.
#include "cluster/controller/Borrowers.h"
#include "cluster/controller/Decide.h"
#include "cluster/controller/Drain.h"

#include "test/unit/RecordedNodes.h"
#include "test/unit/cluster_controller/MemoryStore.h"

#include <gtest/gtest.h>
#include <llvm/ADT/StringRef.h>

namespace msc::cluster {
namespace {

constexpr int64_t kLeaderRev = 7;
constexpr int64_t kWallUs = 1764950400000000;

const char *kPair = "import \"profiles/mlvm.msc\";\ncontract pair uses profile mlvm_light {\n  nodes = 2;\n"
                    "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";
const char *kInfer = "contract infer {\n  class = opportunistic;\n  cpu_cores = 3;\n  memory = 256MiB;\n}\n";
const char *kPrep = "contract prep {\n  class = opportunistic;\n  cpu_cores = 2;\n  memory = 256MiB;\n}\n";
// What `cluster submit --class opportunistic` sends: the source says no class of its own.
const char *kPlainPrep = "contract plain_prep {\n  cpu_cores = 2;\n  memory = 256MiB;\n}\n";

ReconcileOptions options() {
  ReconcileOptions o;
  o.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  o.compilerVersion = "test";
  return o;
}

struct Cluster {
  test::MemoryStore store;
  ReconcileMemory memory;
  Cluster() {
    for (const char *n : {"n1", "n2", "n3"})
      store.put(std::string(kNodesPrefix) + n, encodeRegistration({"test", test::recordedNodeYaml()}));
  }
  void lends(const std::string &node, uint32_t cpus, uint32_t sharePermille, uint32_t owners = 1) {
    store.put(lendingKey(node), encodeLending({owners, cpus, 0, sharePermille, 0}));
  }
  void submit(const std::string &name, const std::string &source, const std::string &contractClass = {}) {
    store.put(std::string(kContractsPrefix) + name, encodeSubmission({name, source, {"/bin/work"}, {}, contractClass}));
  }
  Decision round() {
    ManualClock clock(0, kWallUs);
    Decision d = decide(store.read(memory), memory, clock, options(), kLeaderRev);
    for (const ContractAction &a : d.actions)
      for (const etcd::TxnOp &op : a.ops)
        op.kind == etcd::TxnOp::Kind::Put ? (void)store.put(op.key, op.value) : store.remove(op.key);
    return d;
  }
  std::vector<std::string> nodesOf(const std::string &contract) const {
    std::vector<std::string> nodes;
    for (const auto &[key, value] : store.keys)
      if (llvm::StringRef(key).starts_with(kAssignmentsPrefix) && llvm::StringRef(key).ends_with("/" + contract))
        nodes.push_back(llvm::StringRef(key).drop_front(llvm::StringRef(kAssignmentsPrefix).size()).split('/').first.str());
    return nodes;
  }
  std::string lastEvent(const std::string &contract) const {
    auto it = store.keys.find(std::string(kContractEventsPrefix) + contract);
    if (it == store.keys.end())
      return {};
    std::vector<ContractEvent> events = decodeEvents(it->second.value);
    return events.empty() ? std::string() : events.back().text;
  }
};

using Nodes = std::vector<std::string>;

// n1 lends 4 CPUs 80% of the time, and infer borrows 3 of them.
struct BorrowingOnN1 : Cluster {
  BorrowingOnN1() {
    lends("n1", 4, 800);
    submit("infer", kInfer);
    round();
    EXPECT_EQ(nodesOf("infer"), Nodes{"n1"});
  }
};

TEST(Borrowers, WaitWhereNothingIsLentAndArePlacedOnceANodeLends) {
  Cluster c;
  c.submit("infer", kInfer);
  Decision d = c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{});
  ASSERT_EQ(d.report.refused.size(), 1u);
  EXPECT_NE(d.report.refused[0].find("ERR_PLACE_001"), std::string::npos) << d.report.refused[0];
  EXPECT_EQ(llvm::StringRef(c.lastEvent("infer")).starts_with("waits for a node that lends what it asks: "), true)
      << c.lastEvent("infer");
  std::string status = c.store.keys.at(std::string(kContractStatusPrefix) + "infer").value;
  EXPECT_NE(status.find("its agent publishes no lending"), std::string::npos) << status;

  c.lends("n2", 2, 900); // too little: it asks for 3
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{});
  c.lends("n3", 4, 500);
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n3"});
  EXPECT_EQ(c.lastEvent("infer"), "placed on n3");
}

// A borrower of queue pairs goes only where one owner lends that many on one port, and two are not
// promised the same queue pairs.
TEST(Borrowers, OfQueuePairsGoWhereAPortLendsThemAndAreNotPromisedThemTwice) {
  Cluster c;
  c.lends("n1", 4, 1000); // CPUs, no queue pairs
  c.store.put(lendingKey("n2"), encodeLending({1, 4, 0, 500, 0, 3}));
  c.submit("fetch", "contract fetch {\n  class = opportunistic;\n  cpu_cores = 1;\n  rdma_qps = 2;\n}\n");
  c.submit("fetch2", "contract fetch2 {\n  class = opportunistic;\n  cpu_cores = 1;\n  rdma_qps = 2;\n}\n");
  c.round();
  EXPECT_EQ(c.nodesOf("fetch"), Nodes{"n2"}) << "n1 has more CPU to spare but lends no queue pair";
  EXPECT_EQ(c.nodesOf("fetch2"), Nodes{});
  std::string status = c.store.keys.at(std::string(kContractStatusPrefix) + "fetch2").value;
  EXPECT_NE(status.find("it lends 1 RDMA queue pairs on one port not asked by the borrowers there, the borrower asks 2"),
            std::string::npos)
      << status;
}

TEST(Borrowers, GoWhereTheMostLentCapacityIsSpare) {
  Cluster c;
  c.lends("n1", 4, 300);
  c.lends("n2", 4, 900); // 4 CPUs lent 90% of the time: the most to spare
  c.lends("n3", 8, 500);
  c.submit("infer", kInfer);
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n3"}); // 8 x 500 > 4 x 900
  // n3 has 5 CPUs left not asked (5 x 500), n2 4 (4 x 900): the next borrower goes to n2.
  c.submit("prep", kPrep);
  c.round();
  EXPECT_EQ(c.nodesOf("prep"), Nodes{"n2"});
}

// A borrower runs while all it asks is lent: one of GPU units goes where they are lendable the
// longest, one of CPUs alone where the CPUs are.
TEST(Borrowers, OfGpuUnitsGoWhereTheUnitsAreLendableTheLongest) {
  Cluster c;
  // n1: its CPUs lendable 90% of the time, its GPU units 10% (a forward that keeps the GPU most of
  // the step); n2: both 60%.
  c.store.put(lendingKey("n1"), encodeLending({1, 4, 4, 900, 0, 0, 100, 0, 0, 0}));
  c.store.put(lendingKey("n2"), encodeLending({1, 4, 4, 600, 0, 0, 600, 0, 0, 0}));
  c.submit("render", "contract render {\n  class = opportunistic;\n  cpu_cores = 1;\n  gpu_sm_slices = 2;\n}\n");
  c.submit("prep", kPrep);
  c.round();
  EXPECT_EQ(c.nodesOf("render"), Nodes{"n2"}) << "n1's CPUs are lendable longer, its GPU units are not";
  EXPECT_EQ(c.nodesOf("prep"), Nodes{"n1"});
}

TEST(Borrowers, AreNotPromisedTheSameLentCpusTwice) {
  Cluster c;
  c.lends("n1", 4, 1000);
  c.submit("infer", kInfer); // 3 of n1's 4
  c.submit("prep", kPrep);   // 2: only 1 is left
  Decision d = c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n1"});
  EXPECT_EQ(c.nodesOf("prep"), Nodes{});
  std::string status = c.store.keys.at(std::string(kContractStatusPrefix) + "prep").value;
  EXPECT_NE(status.find("it lends 1 CPUs not asked by the borrowers there, the borrower asks 2"), std::string::npos)
      << status;
}

TEST(Borrowers, MoveWhenTheLoanIsTakenBackForGoodAndWaitWhenNoNodeLends) {
  Cluster c;
  c.lends("n1", 4, 800);
  c.lends("n2", 4, 500);
  c.submit("infer", kInfer);
  c.round();
  ASSERT_EQ(c.nodesOf("infer"), Nodes{"n1"});
  // A phase taking CPUs back is the node's business: the same record, the same place.
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n1"});

  c.lends("n1", 0, 0, 0); // its owner left n1
  Decision moved = c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n2"});
  EXPECT_EQ(c.lastEvent("infer"), "node n1 lends no more what it asks (no contract there lends): placed again on n2");
  ASSERT_EQ(moved.report.placed.size(), 1u);
  EXPECT_EQ(moved.report.placed[0], "infer -> n2 (node n1 lends no more what it asks (no contract there lends))");

  c.store.remove(lendingKey("n2")); // its agent went with its lease
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{}); // re-queued: its worker on n2 stops, its snapshots stay
  EXPECT_EQ(llvm::StringRef(c.lastEvent("infer"))
                .starts_with("node n2 lends no more what it asks (its agent publishes no lending): waits for a node that "
                             "lends what it asks: "),
            true)
      << c.lastEvent("infer");
  c.lends("n3", 4, 100);
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n3"});
}

TEST(Borrowers, LeaveADrainedNodeAtOnceAndDoNotHoldTheDrain) {
  BorrowingOnN1 c;
  c.lends("n2", 4, 500);
  c.store.put(cordonKey("n1"), encodeCordon({"operator", "draining", kLeaderRev, kWallUs / 1000}));
  c.store.put(drainKey("n1"), encodeDrain({kLeaderRev, kWallUs / 1000, kWallUs / 1000 + 600'000, false, false}));
  EXPECT_EQ(jobsToDrain(c.store.read(c.memory), "n1"), std::vector<std::string>{});
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n2"});
  EXPECT_EQ(c.lastEvent("infer"), "drain of n1: placed again on n2");
}

TEST(Borrowers, NeverKeepAGuaranteedJobWaiting) {
  // A cordon on n3 leaves the two-node job exactly n1 and n2; a borrower on n1 changes nothing.
  BorrowingOnN1 c;
  c.store.put(cordonKey("n3"), encodeCordon({"operator", "repair", kLeaderRev, 1000}));
  c.submit("pair", kPair);
  c.round();
  EXPECT_EQ(c.nodesOf("pair"), (Nodes{"n1", "n2"}));
  EXPECT_EQ(c.nodesOf("infer"), Nodes{"n1"}); // still lent there: the owner's loans are the node's business
}

TEST(Borrowers, FaultsOfABorrowerAreNotTheNodes) {
  // Frozen, ended and moved by design, or crashing on its own: no fault in the node's history, so
  // that a lemon rule never cordons a healthy node for a borrower.
  BorrowingOnN1 c;
  AssignmentStatus crashed{"applied", "", kLeaderRev, "exited", 4242, 1, {"fault worker-crashed at step 3"}};
  crashed.faults = 2;
  c.store.put(statusKey("n1", "infer"), encodeStatus(crashed));
  EXPECT_TRUE(c.round().faults.empty());
  c.store.remove(std::string(kNodesPrefix) + "n1"); // lost, with its borrower
  c.lends("n2", 4, 800);
  ManualClock lost(10'000'000'000, kWallUs), afterGrace(13'000'000'000, kWallUs);
  EXPECT_TRUE(decide(c.store.read(c.memory), c.memory, lost, options(), kLeaderRev).faults.empty());
  Decision d = decide(c.store.read(c.memory), c.memory, afterGrace, options(), kLeaderRev);
  EXPECT_TRUE(d.faults.empty());
  ASSERT_EQ(d.report.replaced.size(), 1u);
  EXPECT_EQ(d.report.replaced[0], "infer -> n2");
}

TEST(Borrowers, ALendingRecordThatDoesNotReadLendsNothingAndIsSaidOnce) {
  BorrowingOnN1 c;
  c.store.put(lendingKey("n1"), "owners 1\ncpus 4\ngpu-units 0\nshare-permille 1500\nlent-cpus 0\n");
  Decision d = c.round();
  ASSERT_EQ(d.report.unreadableLending.size(), 1u);
  EXPECT_EQ(d.report.unreadableLending[0], "error[ERR_CLUSTER_022]: the lending record of node 'n1' cannot be read: a "
                                           "share of 1500 permille is more than the whole");
  EXPECT_EQ(c.nodesOf("infer"), Nodes{});
  EXPECT_TRUE(c.round().report.unreadableLending.empty()); // once per value
  // Written by hand, under no lease: no agent stands behind it.
  c.store.unleased.insert(lendingKey("n2"));
  c.lends("n2", 4, 800);
  Decision unleased = c.round();
  ASSERT_EQ(unleased.report.unreadableLending.size(), 1u);
  EXPECT_NE(unleased.report.unreadableLending[0].find("under no lease"), std::string::npos);
  EXPECT_EQ(c.nodesOf("infer"), Nodes{});
}

TEST(Borrowers, ASubmissionsClassMakesABorrowerAndMustAgreeWithTheContracts) {
  Cluster c;
  c.lends("n2", 4, 800);
  c.submit("plain_prep", kPlainPrep, "opportunistic");
  c.round();
  EXPECT_EQ(c.nodesOf("plain_prep"), Nodes{"n2"});
  c.submit("infer", "contract infer {\n  class = guaranteed;\n  io_topology { r0 { cpu_cores = [1]; } }\n}\n",
           "opportunistic");
  c.round();
  EXPECT_EQ(c.nodesOf("infer"), Nodes{});
  std::string status = c.store.keys.at(std::string(kContractStatusPrefix) + "infer").value;
  EXPECT_NE(status.find("error[ERR_CLUSTER_023]: cannot submit contract 'infer' as opportunistic: the contract says "
                        "class = guaranteed"),
            std::string::npos)
      << status;
}

} // namespace
} // namespace msc::cluster
