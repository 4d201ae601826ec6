// How the leading controller grows an elastic job back when capacity returns (cluster/controller/
// Grow.h), decided round by round from cluster states built in memory: no etcd, no wall clock. Each
// round reads the store, decides, and the test writes what the agents would answer before the next:
//   capacity returns -> ask (stop, step not chosen) -> every rank answers its step -> stop after S
//   -> every rank stopped at S -> placed again, whole, at the larger size.
#include "cluster/controller/Decide.h"

#include "test/unit/RecordedNodes.h"
#include "test/unit/cluster_controller/MemoryStore.h"

#include <gtest/gtest.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>

namespace msc::cluster {
namespace {

constexpr int64_t kLeaderRev = 7;
constexpr uint64_t kSecond = 1'000'000'000;
constexpr int64_t kWallUs = 1764950400000000; // the wall time at virtual time 0, in µs

std::string contract(const std::string &nodes) {
  return "import \"profiles/mlvm.msc\";\ncontract pair uses profile mlvm_light {\n  nodes = " + nodes +
         "; global_batch = 96 samples;\n  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";
}

ReconcileOptions options() {
  ReconcileOptions o;
  o.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  o.compilerVersion = "test";
  return o; // stopLead 3 s, growTimeout 60 s: their defaults
}

// Recorded machines n1 and n2 and the job "pair" (`nodes` as given), placed on both by a first
// round with its workers running there; n3 registers when a test says so.
struct Cluster {
  test::MemoryStore store;
  ReconcileMemory memory;
  explicit Cluster(const std::string &nodes = "2..3") {
    for (const char *n : {"n1", "n2"})
      add(n);
    store.put(std::string(kContractsPrefix) + "pair", encodeSubmission({"pair", contract(nodes), {"/bin/train"}, {}}));
    commit(decideAt(0));
    for (const char *n : {"n1", "n2"}) {
      EXPECT_TRUE(store.keys.count(assignmentKey(n, "pair"))) << "pair is expected on " << n;
      said(n, "running");
    }
  }
  void add(const std::string &node) {
    store.put(std::string(kNodesPrefix) + node, encodeRegistration({"test", test::recordedNodeYaml()}));
  }
  Decision decideAt(uint64_t nowNs, ReconcileOptions o = options(), int64_t leaderRev = kLeaderRev) {
    ManualClock clock(nowNs, kWallUs);
    return decide(store.read(memory), memory, clock, o, leaderRev);
  }
  // The node's agent is gone: its lease took its registration (and the statuses under it) along.
  void lose(const std::string &node) {
    store.remove(std::string(kNodesPrefix) + node);
    store.remove(statusKey(node, "pair"));
  }
  // Where pair is assigned now, and each assignment's RANK and WORLD_SIZE: one rank per node, the
  // ranks 0..N-1 once each, every one told N.
  std::vector<std::string> placedOn() const {
    std::vector<std::string> nodes;
    for (const char *n : {"n1", "n2", "n3"})
      if (store.keys.count(assignmentKey(n, "pair")))
        nodes.push_back(n);
    return nodes;
  }
  void expectOneCopyOfEachRank() const {
    std::vector<std::string> nodes = placedOn();
    std::vector<bool> seen(nodes.size());
    for (const std::string &n : nodes) {
      std::string why;
      std::optional<Assignment> a = decodeAssignment(store.keys.at(assignmentKey(n, "pair")).value, why);
      ASSERT_TRUE(a) << why;
      EXPECT_EQ(a->environment["WORLD_SIZE"], std::to_string(nodes.size())) << n;
      unsigned rank = unsigned(std::stoul(a->environment["RANK"]));
      ASSERT_LT(rank, nodes.size()) << n;
      EXPECT_FALSE(seen[rank]) << "rank " << rank << " twice";
      seen[rank] = true;
    }
  }
  // The status n's agent writes for pair: its worker's state and, when given, its answer to a stop.
  void said(const std::string &node, const std::string &worker, std::optional<StopAnswer> stop = std::nullopt) {
    AssignmentStatus s;
    s.state = "applied";
    s.leaderRevision = kLeaderRev;
    s.worker = worker;
    s.pid = worker == "running" ? 4242 : 0;
    s.stop = stop;
    store.put(statusKey(node, "pair"), encodeStatus(s));
  }
  void commit(const Decision &d) {
    for (const CordonAction &c : d.cordons)
      if (!store.keys.count(c.op.key))
        store.put(c.op.key, c.op.value);
    for (const ContractAction &a : d.actions)
      for (const etcd::TxnOp &op : a.ops)
        op.kind == etcd::TxnOp::Kind::Put ? (void)store.put(op.key, op.value) : store.remove(op.key);
  }
  std::optional<PlannedStop> stopIn(const std::string &node) const {
    std::string why;
    std::optional<Assignment> a = decodeAssignment(store.keys.at(assignmentKey(node, "pair")).value, why);
    EXPECT_TRUE(a) << why;
    return a ? a->stop : std::nullopt;
  }
  std::vector<ContractEvent> events() const {
    auto e = store.keys.find(std::string(kContractEventsPrefix) + "pair");
    return e == store.keys.end() ? std::vector<ContractEvent>{} : decodeEvents(e->second.value);
  }
};

const ContractAction *actionFor(const Decision &d) {
  auto it = std::find_if(d.actions.begin(), d.actions.end(), [](const ContractAction &a) { return a.contract == "pair"; });
  return it == d.actions.end() ? nullptr : &*it;
}

std::map<std::string, std::string> environmentOf(const Cluster &cluster, const std::string &node) {
  std::string why;
  std::optional<Assignment> a = decodeAssignment(cluster.store.keys.at(assignmentKey(node, "pair")).value, why);
  EXPECT_TRUE(a) << why;
  return a ? a->environment : std::map<std::string, std::string>{};
}

// The whole grow: the node that registers is looked at, the job asked to stop at a boundary chosen
// ahead, and once both ranks stopped there it is placed on three nodes, each rank told its new
// share; it resumes from the step it stopped after (nothing is run twice: a planned move).
TEST(Grow, AnElasticJobBelowItsMostGrowsAtASnapshotBoundaryWhenANodeRegisters) {
  Cluster cluster;
  EXPECT_FALSE(actionFor(cluster.decideAt(kSecond))) << "no room yet: nothing asked";

  cluster.add("n3");
  Decision asked = cluster.decideAt(2 * kSecond);
  ASSERT_TRUE(actionFor(asked));
  EXPECT_EQ(actionFor(asked)->kind, ContractAction::Kind::Stop);
  EXPECT_TRUE(asked.report.stopping) << "the leader looks again before the grow's timeout";
  cluster.commit(asked);
  std::optional<PlannedStop> stop = cluster.stopIn("n1");
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->cause, PlannedStop::Cause::Grow);
  EXPECT_EQ(stop->afterStep, 0u) << "first each rank says where it is";
  EXPECT_EQ(cluster.stopIn("n2"), stop);
  EXPECT_EQ(cluster.events().back().text, "grow from 2 to 3 nodes: asked to stop at a snapshot boundary");

  EXPECT_FALSE(actionFor(cluster.decideAt(3 * kSecond))) << "waiting for the answers: nothing new";
  cluster.said("n1", "running", StopAnswer{stop->id, 1, 40, 100, 0, 0});
  cluster.said("n2", "running", StopAnswer{stop->id, 1, 39, 120, 0, 0});
  Decision chosen = cluster.decideAt(4 * kSecond);
  ASSERT_TRUE(actionFor(chosen));
  cluster.commit(chosen);
  // The newest step answered and 3 s at the quickest pace: 40 + 30.
  EXPECT_EQ(cluster.stopIn("n1"), (PlannedStop{stop->id, 1, 70, PlannedStop::Cause::Grow}));
  EXPECT_EQ(cluster.stopIn("n2"), cluster.stopIn("n1")) << "the same step on every rank";
  EXPECT_EQ(cluster.events().back().text, "grow from 2 nodes: asked to stop after step 70");

  cluster.said("n1", "exited", StopAnswer{stop->id, 1, 40, 100, 70, 0});
  EXPECT_FALSE(actionFor(cluster.decideAt(5 * kSecond))) << "one rank stopped: the job waits for the other";
  cluster.said("n2", "exited", StopAnswer{stop->id, 1, 39, 120, 70, 0});
  Decision grown = cluster.decideAt(6 * kSecond);
  const ContractAction *place = actionFor(grown);
  ASSERT_TRUE(place);
  EXPECT_EQ(place->kind, ContractAction::Kind::Place);
  EXPECT_EQ(grown.report.placed, std::vector<std::string>{"pair -> n1,n2,n3 (grow from 2 nodes: stopped after step 70)"});
  cluster.commit(grown);
  EXPECT_EQ(cluster.events().back().text,
            "grow from 2 nodes: stopped after step 70: placed again on n1,n2,n3 (world size 3 of 2..3)");
  for (const char *n : {"n1", "n2", "n3"}) {
    EXPECT_FALSE(cluster.stopIn(n)) << n << ": a new placement asks no stop";
    EXPECT_EQ(environmentOf(cluster, n)["WORLD_SIZE"], "3") << n;
    EXPECT_EQ(environmentOf(cluster, n)["MSCALE_RANK_BATCH"], "32") << n;
  }
  for (const char *n : {"n1", "n2", "n3"})
    cluster.said(n, "running");
  EXPECT_FALSE(actionFor(cluster.decideAt(7 * kSecond))) << "at its most: it grows no more";
}

TEST(Grow, AJobOfOneSizeIsNeverAskedToGrow) {
  Cluster cluster("2");
  cluster.add("n3");
  Decision d = cluster.decideAt(kSecond);
  EXPECT_FALSE(actionFor(d));
  EXPECT_FALSE(d.report.stopping);
}

// A grow is not a fault: it must not cost a waiting job its chance. In a round that places
// another contract the grow waits; once the new node is taken the look finds no room.
TEST(Grow, AJobPlacedInTheSameRoundComesFirstAndTheGrowFindsNoRoomAfterIt) {
  Cluster cluster;
  cluster.add("n3");
  // A job that needs the four GPUs of a node: only n3 has them all free.
  cluster.store.put(std::string(kContractsPrefix) + "wide",
                    encodeSubmission({"wide",
                                      "import \"profiles/mlvm.msc\";\ncontract wide uses profile mlvm_light {\n"
                                      "  io_topology { r0 { gpus = 4; } }\n}\n",
                                      {"/bin/true"}, {}}));
  Decision first = cluster.decideAt(kSecond);
  EXPECT_FALSE(actionFor(first)) << "a round that places something starts no grow";
  cluster.commit(first);
  Decision next = cluster.decideAt(2 * kSecond);
  EXPECT_FALSE(actionFor(next)) << "n3's GPUs are wide's: a third rank has no GPU there";
  EXPECT_FALSE(next.report.stopping);
  EXPECT_EQ(cluster.store.keys.count(assignmentKey("n3", "wide")), 1u);
}

// A worker that never reports its step (a shell command) cannot stop at a boundary: the grow's ask
// is withdrawn at its timeout, said once, and this placement is not asked again.
TEST(Grow, AJobThatDoesNotStopAtABoundaryInTimeKeepsItsSizeAndIsNotAskedAgain) {
  Cluster cluster;
  cluster.add("n3");
  cluster.commit(cluster.decideAt(kSecond));
  ASSERT_TRUE(cluster.stopIn("n1"));
  EXPECT_FALSE(actionFor(cluster.decideAt(30 * kSecond)));
  Decision timedOut = cluster.decideAt(61 * kSecond);
  ASSERT_TRUE(actionFor(timedOut));
  cluster.commit(timedOut);
  EXPECT_FALSE(cluster.stopIn("n1")) << "withdrawn";
  EXPECT_FALSE(cluster.stopIn("n2"));
  EXPECT_EQ(cluster.events().back().text,
            "grow from 2 nodes: not stopped at a snapshot boundary within 60 s; it runs on at its size");
  EXPECT_TRUE(cluster.store.keys.count(assignmentKey("n1", "pair")) && !cluster.store.keys.count(assignmentKey("n3", "pair")));
  for (uint64_t t : {62, 200, 4000})
    EXPECT_FALSE(actionFor(cluster.decideAt(t * kSecond))) << "the same placement is not asked again (t=" << t << " s)";
}

// A drain of a node of a growing job takes the job over: its ask replaces the grow's, and the job
// moves off the drained node as a drain moves it.
TEST(Grow, ADrainOfAGrowingJobsNodeReplacesTheGrowsAsk) {
  Cluster cluster;
  cluster.add("n3");
  cluster.commit(cluster.decideAt(kSecond));
  std::optional<PlannedStop> grow = cluster.stopIn("n1");
  ASSERT_TRUE(grow && grow->cause == PlannedStop::Cause::Grow);
  cluster.store.put(cordonKey("n2"), encodeCordon({"operator", "draining", kLeaderRev, kWallUs / 1000}));
  int64_t drain = cluster.store.put(drainKey("n2"), encodeDrain({kLeaderRev, kWallUs / 1000, kWallUs / 1000 + 600'000, false, false}));
  Decision d = cluster.decideAt(2 * kSecond);
  ASSERT_TRUE(actionFor(d));
  EXPECT_EQ(std::count_if(d.actions.begin(), d.actions.end(), [](const ContractAction &a) { return a.contract == "pair"; }), 1)
      << "one write of the job's assignments a round";
  cluster.commit(d);
  EXPECT_EQ(cluster.stopIn("n1"), (PlannedStop{drain, 1, 0, PlannedStop::Cause::Drain}));
  EXPECT_EQ(cluster.stopIn("n2"), cluster.stopIn("n1"));
}

// Faults during a size change end in one consistent size, never in two copies of a rank.

// The leader fails over after the stop step was chosen: the next leader (no memory of the grow, a
// higher revision) reads the ask from the assignments, waits for the ranks and places the job
// once, at the larger size.
TEST(Grow, ALeaderFailoverMidGrowGoesOnFromTheStoreAndPlacesTheJobOnce) {
  Cluster cluster;
  cluster.add("n3");
  cluster.commit(cluster.decideAt(kSecond));
  PlannedStop stop = *cluster.stopIn("n1");
  cluster.said("n1", "running", StopAnswer{stop.id, 1, 40, 100, 0, 0});
  cluster.said("n2", "running", StopAnswer{stop.id, 1, 40, 100, 0, 0});
  cluster.commit(cluster.decideAt(2 * kSecond));
  ASSERT_EQ(cluster.stopIn("n1")->afterStep, 70u);

  cluster.memory = ReconcileMemory{}; // the new leader's
  constexpr int64_t kNext = kLeaderRev + 5;
  Decision waiting = cluster.decideAt(3 * kSecond, options(), kNext);
  cluster.commit(waiting);
  EXPECT_EQ(cluster.placedOn(), (std::vector<std::string>{"n1", "n2"})) << "the ranks have not stopped yet";
  EXPECT_EQ(cluster.stopIn("n1")->afterStep, 70u) << "the step chosen stands";
  cluster.said("n1", "exited", StopAnswer{stop.id, 1, 40, 100, 70, 0});
  cluster.said("n2", "exited", StopAnswer{stop.id, 1, 40, 100, 70, 0});
  Decision grown = cluster.decideAt(4 * kSecond, options(), kNext);
  cluster.commit(grown);
  EXPECT_EQ(cluster.placedOn(), (std::vector<std::string>{"n1", "n2", "n3"}));
  cluster.expectOneCopyOfEachRank();
  for (const char *n : {"n1", "n2", "n3"})
    cluster.said(n, "running");
  Decision after = cluster.decideAt(5 * kSecond, options(), kNext);
  EXPECT_FALSE(actionFor(after)) << "placed once: nothing more to do";
}

// A node of the job is lost while the job stops for a grow: the grow cannot finish (a rank will
// never say it stopped), so after the lost node's grace the job is placed again as for any lost
// node, at the size the nodes left allow, each rank once.
TEST(Grow, ANodeLostWhileTheJobStopsForAGrowEndsInOneConsistentSize) {
  Cluster cluster;
  cluster.add("n3");
  cluster.commit(cluster.decideAt(kSecond));
  PlannedStop stop = *cluster.stopIn("n1");
  cluster.said("n1", "running", StopAnswer{stop.id, 1, 40, 100, 0, 0});
  cluster.said("n2", "running", StopAnswer{stop.id, 1, 40, 100, 0, 0});
  cluster.commit(cluster.decideAt(2 * kSecond));
  cluster.said("n1", "exited", StopAnswer{stop.id, 1, 40, 100, 70, 0});
  cluster.lose("n2");
  for (uint64_t t = 3; t <= 20; ++t) {
    Decision d = cluster.decideAt(t * kSecond);
    cluster.commit(d);
    cluster.expectOneCopyOfEachRank();
    if (const ContractAction *a = actionFor(d); a && a->kind == ContractAction::Kind::Place)
      for (const std::string &n : cluster.placedOn())
        cluster.said(n, "running");
  }
  EXPECT_EQ(cluster.placedOn(), (std::vector<std::string>{"n1", "n3"})) << "two nodes are left: the job runs on both";
  EXPECT_FALSE(cluster.stopIn("n1")) << "the grow's ask is gone with its placement";
  EXPECT_FALSE(cluster.stopIn("n3"));
}

// A range the cluster can never fill does not keep asking: once at its largest placeable size, the
// look finds no larger placement, nothing is asked, and the look waits for the cluster to change.
TEST(Grow, NoAskWhileTheClusterHasNoRoomForALargerSize) {
  Cluster cluster("2..4");
  for (uint64_t t : {1, 2, 3})
    EXPECT_FALSE(actionFor(cluster.decideAt(t * kSecond)));
  EXPECT_EQ(cluster.memory.growNoRoom.count("pair"), 1u) << "the look is not repeated while nothing changes";
  cluster.add("n3"); // a change the look must see again
  Decision d = cluster.decideAt(4 * kSecond);
  ASSERT_TRUE(actionFor(d)) << "3 of 2..4 is larger than 2: the job grows to what there is";
  cluster.commit(d);
  EXPECT_EQ(cluster.events().back().text, "grow from 2 to 3 nodes: asked to stop at a snapshot boundary");
}

} // namespace
} // namespace msc::cluster
