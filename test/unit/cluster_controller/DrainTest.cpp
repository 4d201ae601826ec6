// How the leading controller drains a node (cluster/controller/Drain.h), decided round by round
// from cluster states built in memory: no etcd, no wall clock. Each round reads the store, decides,
// and the test writes what the agents would answer before the next one:
//   ask (stop, step not chosen) -> every rank answers its step -> stop after S -> every rank
//   stopped at S -> placed again, whole, off the drained node.
#include "cluster/controller/Decide.h"
#include "cluster/controller/Drain.h"

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
constexpr int64_t kStartMs = kWallUs / 1000;
constexpr int64_t kDeadlineMs = kStartMs + 600'000; // a drain's default: ten minutes

const char *kPair = "import \"profiles/mlvm.msc\";\ncontract pair uses profile mlvm_light {\n  nodes = 2;\n"
                    "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";

ReconcileOptions options() {
  ReconcileOptions o;
  o.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  o.compilerVersion = "test";
  return o; // stopLead: its default, 3000 ms
}

using Store = test::MemoryStore;

// Three recorded machines n1..n3 and the two-node job "pair", placed on n1 and n2 by a first round
// (the nodes in name order, as DecideTest shows) with its workers running there.
struct Cluster {
  Store store;
  ReconcileMemory memory;
  explicit Cluster(bool running = true) {
    for (const char *n : {"n1", "n2", "n3"})
      store.put(std::string(kNodesPrefix) + n, encodeRegistration({"test", test::recordedNodeYaml()}));
    store.put(std::string(kContractsPrefix) + "pair", encodeSubmission({"pair", kPair, {"/bin/train"}, {}}));
    commit(decideAt(0));
    EXPECT_TRUE(store.keys.count(assignmentKey("n1", "pair")) && store.keys.count(assignmentKey("n2", "pair")))
        << "pair is expected on n1 and n2";
    if (running)
      for (const char *n : {"n1", "n2"})
        said(n, "running");
  }
  Decision decideAt(uint64_t nowNs, int64_t leaderRevision = kLeaderRev) {
    ManualClock clock(nowNs, kWallUs);
    return decide(store.read(memory), memory, clock, options(), leaderRevision);
  }
  // What `mscale-cli cluster drain` writes: the node's cordon and its drain record. The drain's id.
  int64_t drain(const std::string &node, int64_t deadlineMs = kDeadlineMs, bool force = false) {
    store.put(cordonKey(node), encodeCordon({"operator", "draining", kLeaderRev, kStartMs}));
    return store.put(drainKey(node), encodeDrain({kLeaderRev, kStartMs, deadlineMs, force, false}));
  }
  // What uncordon does: the cordon and the drain record go.
  void uncordon(const std::string &node) {
    store.remove(cordonKey(node));
    store.remove(drainKey(node));
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
  // Every write of `d` as its commit would leave the store (a drain rewritten only as read).
  void commit(const Decision &d) {
    for (const DrainAction &a : d.drains)
      if (a.readModRevision ? store.keys.count(a.op.key) && store.keys.at(a.op.key).modRevision == a.readModRevision
                            : !store.keys.count(a.op.key))
        store.put(a.op.key, a.op.value);
    for (const CordonAction &c : d.cordons)
      if (!store.keys.count(c.op.key)) // only while the node has no cordon
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
};

const ContractAction *actionFor(const Decision &d, const std::string &contract = "pair") {
  auto it = std::find_if(d.actions.begin(), d.actions.end(), [&](const ContractAction &a) { return a.contract == contract; });
  return it == d.actions.end() ? nullptr : &*it;
}

// The assignment `a` puts for `node`, decoded; nullopt (and a failure) when it puts none.
std::optional<Assignment> assignmentPut(const ContractAction &a, const std::string &node) {
  for (const etcd::TxnOp &op : a.ops)
    if (op.kind == etcd::TxnOp::Kind::Put && op.key == assignmentKey(node, a.contract)) {
      std::string why;
      std::optional<Assignment> assignment = decodeAssignment(op.value, why);
      EXPECT_TRUE(assignment) << why;
      return assignment;
    }
  ADD_FAILURE() << "no assignment put for " << node;
  return std::nullopt;
}

std::vector<std::string> keysPut(const ContractAction &a) {
  std::vector<std::string> out;
  for (const etcd::TxnOp &op : a.ops)
    if (op.kind == etcd::TxnOp::Kind::Put)
      out.push_back(op.key);
  return out;
}
std::vector<std::string> keysRemoved(const ContractAction &a) {
  std::vector<std::string> out;
  for (const etcd::TxnOp &op : a.ops)
    if (op.kind == etcd::TxnOp::Kind::Delete)
      out.push_back(op.key);
  return out;
}

// The newest event `a` writes for its contract; empty when it writes none.
std::string eventPut(const ContractAction &a) {
  for (const etcd::TxnOp &op : a.ops)
    if (op.key == std::string(kContractEventsPrefix) + a.contract) {
      std::vector<ContractEvent> events = decodeEvents(op.value);
      return events.empty() ? std::string() : events.back().text;
    }
  return {};
}

bool reportSays(const Decision &d, const std::string &line) {
  return std::find(d.report.drains.begin(), d.report.drains.end(), line) != d.report.drains.end();
}

std::string reportOf(const Decision &d) {
  std::string out;
  for (const std::string &line : d.report.drains)
    out += "\n  " + line;
  return out;
}

// A drain of n1 asked (round 1, committed), then both ranks' answers `step`/`stepMs`: the round
// that chooses S, committed. Returns the drain's id and the step chosen (0 when none was).
struct Chosen {
  int64_t drain = 0;
  uint64_t afterStep = 0;
  Decision decision;
};
Chosen askedAndAnswered(Cluster &cluster, std::pair<uint64_t, uint64_t> n1, std::pair<uint64_t, uint64_t> n2,
                        int64_t deadlineMs = kDeadlineMs, bool force = false) {
  Chosen out;
  out.drain = cluster.drain("n1", deadlineMs, force);
  cluster.commit(cluster.decideAt(0));
  cluster.said("n1", "running", StopAnswer{out.drain, 1, n1.first, n1.second, 0, 0});
  cluster.said("n2", "running", StopAnswer{out.drain, 1, n2.first, n2.second, 0, 0});
  out.decision = cluster.decideAt(1 * kSecond);
  cluster.commit(out.decision);
  std::optional<PlannedStop> stop = cluster.stopIn("n1");
  out.afterStep = stop ? stop->afterStep : 0;
  return out;
}

} // namespace

// Round 1: the job is not moved yet (its ranks would lose the steps since their last snapshot);
// every assignment of the job, the drained node's and the others', is asked for its step, as the
// leader now in office writes it (an agent refuses an assignment from an older leader).
TEST(Drain, AJobRunningOnADrainedNodeIsFirstAskedOnEveryNodeNotMoved) {
  Cluster cluster;
  const std::string planBefore = cluster.store.keys.at(assignmentKey("n1", "pair")).value;
  int64_t id = cluster.drain("n1");
  constexpr int64_t kNewLeader = kLeaderRev + 2; // a failover since the job was placed
  Decision d = cluster.decideAt(0, kNewLeader);
  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, ContractAction::Kind::Stop);
  EXPECT_EQ(keysPut(*a), (std::vector<std::string>{assignmentKey("n1", "pair"), assignmentKey("n2", "pair")}))
      << "both ranks asked; no status, no placement, no event yet";
  EXPECT_TRUE(keysRemoved(*a).empty()) << "nothing moved";
  for (const char *node : {"n1", "n2"}) {
    std::optional<Assignment> put = assignmentPut(*a, node);
    ASSERT_TRUE(put);
    EXPECT_EQ(put->stop, (PlannedStop{id, 1, 0})) << node << ": the drain's id is its record's mod revision";
    EXPECT_EQ(put->leaderRevision, kNewLeader) << node;
    EXPECT_EQ(put->command, std::vector<std::string>{"/bin/train"}) << "the assignment is otherwise the same";
  }
  std::string why;
  EXPECT_EQ(decodeAssignment(planBefore, why)->plan, assignmentPut(*a, "n1")->plan);
  EXPECT_TRUE(d.report.stopping);
  EXPECT_TRUE(d.drains.empty());
  EXPECT_TRUE(d.report.placed.empty() && d.report.replaced.empty());

  // Asked and not answered yet: the next round has nothing to add.
  cluster.commit(d);
  Decision again = cluster.decideAt(1 * kSecond, kNewLeader);
  EXPECT_FALSE(actionFor(again)) << reportOf(again);
  EXPECT_TRUE(again.report.stopping);
}

// Round 2: S = the newest step answered + the steps the lead time (3000 ms) covers at the quickest
// rank's pace, never fewer than 2; 5 when no rank knows how long a step takes.
TEST(Drain, OnceEveryRankAnsweredTheStopStepIsTheNewestStepPlusTheLeadTimeInSteps) {
  struct Case {
    std::pair<uint64_t, uint64_t> n1, n2; // (step, stepMs) answered
    uint64_t expected;
    const char *why;
  };
  for (const Case &c : {Case{{18, 100}, {19, 100}, 49, "19 + ceil(3000 / 100)"},
                        Case{{18, 0}, {19, 0}, 24, "step time unknown: 19 + 5"},
                        Case{{18, 5000}, {19, 5000}, 21, "a long step: 19 + at least 2"},
                        Case{{19, 200}, {18, 100}, 49, "the quickest rank's pace"},
                        Case{{19, 0}, {18, 1000}, 22, "the one rank that knows: 19 + 3"}}) {
    SCOPED_TRACE(c.why);
    Cluster cluster;
    Chosen chosen = askedAndAnswered(cluster, c.n1, c.n2);
    const ContractAction *a = actionFor(chosen.decision);
    ASSERT_TRUE(a) << reportOf(chosen.decision);
    EXPECT_EQ(a->kind, ContractAction::Kind::Stop);
    for (const char *node : {"n1", "n2"}) {
      std::optional<Assignment> put = assignmentPut(*a, node);
      ASSERT_TRUE(put);
      EXPECT_EQ(put->stop, (PlannedStop{chosen.drain, 1, c.expected})) << node << ": the same step on every rank";
    }
    const std::string S = std::to_string(c.expected);
    EXPECT_EQ(eventPut(*a), "drain of n1: asked to stop after step " + S);
    EXPECT_TRUE(reportSays(chosen.decision, "n1: pair asked to stop after step " + S)) << reportOf(chosen.decision);
    // Chosen: the ranks are on their way to S; nothing more until they answer.
    EXPECT_FALSE(actionFor(cluster.decideAt(2 * kSecond)));
  }
}

TEST(Drain, NoStepIsChosenUntilEveryRankAnswered) {
  Cluster cluster;
  int64_t id = cluster.drain("n1");
  cluster.commit(cluster.decideAt(0));
  cluster.said("n1", "running", StopAnswer{id, 1, 18, 100, 0, 0}); // n2's agent has not answered yet
  Decision d = cluster.decideAt(1 * kSecond);
  EXPECT_FALSE(actionFor(d)) << reportOf(d);
  EXPECT_TRUE(d.report.stopping);
  EXPECT_EQ(cluster.stopIn("n1"), (PlannedStop{id, 1, 0}));
  // An answer to another drain (an earlier one, say) is no answer to this one.
  cluster.said("n2", "running", StopAnswer{id - 1, 1, 19, 100, 0, 0});
  EXPECT_FALSE(actionFor(cluster.decideAt(2 * kSecond)));
}

// Round 3: every rank stopped after S with its snapshot: the job is placed again whole, off the
// drained node (cordoned), and resumes from S; its event names the drain and the step.
TEST(Drain, OnceEveryRankStoppedAfterTheStepTheJobIsPlacedAgainWholeOffTheDrainedNode) {
  Cluster cluster;
  Chosen chosen = askedAndAnswered(cluster, {18, 100}, {19, 100});
  ASSERT_EQ(chosen.afterStep, 49u);
  cluster.said("n1", "exited", StopAnswer{chosen.drain, 1, 19, 100, 49, 0});
  Decision one = cluster.decideAt(2 * kSecond);
  EXPECT_FALSE(actionFor(one)) << "one rank stopped; the other is still on its way";
  cluster.said("n2", "exited", StopAnswer{chosen.drain, 1, 19, 100, 49, 0});

  Decision d = cluster.decideAt(3 * kSecond);
  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a) << reportOf(d);
  EXPECT_EQ(a->kind, ContractAction::Kind::Place);
  for (const std::string &key : keysPut(*a))
    EXPECT_FALSE(llvm::StringRef(key).starts_with(assignmentsPrefix("n1"))) << key;
  EXPECT_EQ(keysRemoved(*a), std::vector<std::string>{assignmentKey("n1", "pair")});
  for (const char *node : {"n2", "n3"}) {
    std::optional<Assignment> put = assignmentPut(*a, node);
    ASSERT_TRUE(put);
    EXPECT_FALSE(put->stop) << node << ": the new placement runs on, unasked";
  }
  EXPECT_NE(eventPut(*a).find("drain of n1: stopped after step 49"), std::string::npos) << eventPut(*a);
  EXPECT_EQ(eventPut(*a), "drain of n1: stopped after step 49: placed again on n2,n3");
  EXPECT_EQ(d.report.placed, std::vector<std::string>{"pair -> n2,n3 (drain of n1: stopped after step 49)"});
  EXPECT_TRUE(d.report.replaced.empty()) << "moved as planned, not after a loss";
  EXPECT_TRUE(reportSays(d, "n1: pair stopped after step 49; placing it again, whole, off the node")) << reportOf(d);

  // Moved: nothing of the job is on n1 any more, and the drain is done.
  cluster.commit(d);
  Decision after = cluster.decideAt(4 * kSecond);
  EXPECT_FALSE(actionFor(after)) << reportOf(after);
  EXPECT_FALSE(after.report.stopping);
  EXPECT_TRUE(jobsToDrain(cluster.store.read(cluster.memory), "n1").empty());
}

// A rank that was past S when the ask reached it cannot stop there: the ranks would stop at
// different steps. The job is asked again, a new attempt, step not chosen.
TEST(Drain, ARankThatWentPastTheStepIsAskedAgainWithTheNextAttempt) {
  Cluster cluster;
  Chosen chosen = askedAndAnswered(cluster, {18, 100}, {19, 100});
  ASSERT_EQ(chosen.afterStep, 49u);
  cluster.said("n1", "running", StopAnswer{chosen.drain, 1, 19, 100, 0, 52});
  cluster.said("n2", "exited", StopAnswer{chosen.drain, 1, 19, 100, 49, 0});
  Decision d = cluster.decideAt(2 * kSecond);
  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a) << reportOf(d);
  EXPECT_EQ(a->kind, ContractAction::Kind::Stop);
  for (const char *node : {"n1", "n2"}) {
    std::optional<Assignment> put = assignmentPut(*a, node);
    ASSERT_TRUE(put);
    EXPECT_EQ(put->stop, (PlannedStop{chosen.drain, 2, 0})) << node;
  }
  EXPECT_EQ(eventPut(*a), "drain of n1: a rank went past step 49 before it was asked; asking again");
  cluster.commit(d);

  // The second attempt runs as the first: answered, a step chosen from the new answers.
  EXPECT_FALSE(actionFor(cluster.decideAt(3 * kSecond))) << "the attempt-1 answers count for nothing";
  cluster.said("n1", "running", StopAnswer{chosen.drain, 2, 60, 100, 0, 0});
  cluster.said("n2", "running", StopAnswer{chosen.drain, 2, 60, 100, 0, 0});
  Decision again = cluster.decideAt(4 * kSecond);
  ASSERT_TRUE(actionFor(again)) << reportOf(again);
  EXPECT_EQ(assignmentPut(*actionFor(again), "n2")->stop, (PlannedStop{chosen.drain, 2, 90}));
}

// At the deadline, a forced drain moves the job whatever its ranks said (from its newest snapshot).
TEST(Drain, AtTheDeadlineAForcedDrainMovesTheJobAnyway) {
  Cluster cluster;
  const int64_t deadline = kStartMs + 60'000;
  Chosen chosen = askedAndAnswered(cluster, {18, 100}, {19, 100}, deadline, /*force=*/true);
  ASSERT_EQ(chosen.afterStep, 49u);
  EXPECT_FALSE(actionFor(cluster.decideAt(60 * kSecond - 1))) << "a nanosecond before: still waiting";
  Decision d = cluster.decideAt(60 * kSecond);
  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a) << reportOf(d);
  EXPECT_EQ(a->kind, ContractAction::Kind::Place);
  EXPECT_EQ(eventPut(*a), "drain of n1: deadline passed (--force), moved from its newest snapshot: placed again on n2,n3");
  EXPECT_EQ(keysRemoved(*a), std::vector<std::string>{assignmentKey("n1", "pair")});
  EXPECT_TRUE(reportSays(d, "n1: pair not stopped by the deadline; moved (--force)")) << reportOf(d);
  EXPECT_TRUE(d.drains.empty()) << "a forced drain does not time out";
}

// Without --force the drain gives up at its deadline: the record is rewritten as timed out (only as
// read), the asks are withdrawn, and the job runs on, on the cordoned node.
TEST(Drain, AtTheDeadlineAnUnforcedDrainTimesOutAndItsAsksAreWithdrawn) {
  Cluster cluster;
  const int64_t deadline = kStartMs + 60'000;
  Chosen chosen = askedAndAnswered(cluster, {18, 100}, {19, 100}, deadline);
  ASSERT_EQ(chosen.afterStep, 49u);
  Decision d = cluster.decideAt(61 * kSecond);
  ASSERT_EQ(d.drains.size(), 1u);
  EXPECT_EQ(d.drains[0].node, "n1");
  EXPECT_EQ(d.drains[0].readModRevision, chosen.drain);
  EXPECT_EQ(d.drains[0].op.key, drainKey("n1"));
  std::string why;
  std::optional<Drain> rewritten = decodeDrain(d.drains[0].op.value, why);
  ASSERT_TRUE(rewritten) << why;
  EXPECT_EQ(*rewritten, (Drain{kLeaderRev, kStartMs, deadline, false, true}));
  EXPECT_TRUE(reportSays(d, "n1: timed out with pair still there; without --force they run on, on the cordoned node"))
      << reportOf(d);
  EXPECT_FALSE(d.report.stopping);

  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a) << reportOf(d);
  EXPECT_EQ(a->kind, ContractAction::Kind::Stop);
  for (const char *node : {"n1", "n2"}) {
    std::optional<Assignment> put = assignmentPut(*a, node);
    ASSERT_TRUE(put);
    EXPECT_FALSE(put->stop) << node << ": withdrawn";
  }
  EXPECT_TRUE(keysRemoved(*a).empty()) << "not moved";
  EXPECT_TRUE(reportSays(d, "pair: planned stop withdrawn (its drain is over)")) << reportOf(d);

  // Timed out: the next rounds leave the job and the record alone.
  cluster.commit(d);
  Decision after = cluster.decideAt(62 * kSecond);
  EXPECT_FALSE(actionFor(after)) << reportOf(after);
  EXPECT_TRUE(after.drains.empty());
}

// The ranks stopped at the step asked, but no round moved the job before the deadline (the leader
// was down): a job at its snapshot boundary, with no worker, is moved, not left stopped on the
// cordoned node; the drain times out only for what did not stop.
TEST(Drain, AJobThatStoppedBeforeAnUnforcedDeadlineIsMovedAfterIt) {
  Cluster cluster;
  const int64_t deadline = kStartMs + 60'000;
  Chosen chosen = askedAndAnswered(cluster, {18, 100}, {19, 100}, deadline);
  ASSERT_EQ(chosen.afterStep, 49u);
  cluster.said("n1", "exited", StopAnswer{chosen.drain, 1, 19, 100, 49, 0});
  cluster.said("n2", "exited", StopAnswer{chosen.drain, 1, 19, 100, 49, 0});
  Decision d = cluster.decideAt(61 * kSecond);
  EXPECT_TRUE(d.drains.empty()) << "not timed out: " << reportOf(d);
  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a) << reportOf(d);
  EXPECT_EQ(a->kind, ContractAction::Kind::Place);
  EXPECT_EQ(eventPut(*a), "drain of n1: stopped after step 49: placed again on n2,n3");
}

// Uncordon removes the drain record: an ask left from it is withdrawn.
TEST(Drain, AnAskWhoseDrainIsGoneIsWithdrawn) {
  Cluster cluster;
  Chosen chosen = askedAndAnswered(cluster, {18, 100}, {19, 100});
  ASSERT_EQ(chosen.afterStep, 49u);
  cluster.uncordon("n1");
  Decision d = cluster.decideAt(2 * kSecond);
  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a) << reportOf(d);
  EXPECT_EQ(a->kind, ContractAction::Kind::Stop);
  for (const char *node : {"n1", "n2"}) {
    std::optional<Assignment> put = assignmentPut(*a, node);
    ASSERT_TRUE(put);
    EXPECT_FALSE(put->stop) << node;
    EXPECT_EQ(put->leaderRevision, kLeaderRev);
  }
  EXPECT_TRUE(reportSays(d, "pair: planned stop withdrawn (its drain is over)")) << reportOf(d);
  EXPECT_FALSE(d.report.stopping);
  cluster.commit(d);
  EXPECT_FALSE(actionFor(cluster.decideAt(3 * kSecond))) << "withdrawn once";
}

// A job whose worker on the drained node ended by itself is over: there is nothing to move.
TEST(Drain, AJobWhoseWorkerExitedByItselfIsNotMoved) {
  Cluster cluster;
  cluster.said("n1", "exited"); // no planned stop: it ended there
  cluster.drain("n1");
  ClusterState state = cluster.store.read(cluster.memory);
  EXPECT_TRUE(jobsToDrain(state, "n1").empty());
  Decision d = cluster.decideAt(0);
  EXPECT_FALSE(actionFor(d)) << reportOf(d);
  EXPECT_FALSE(d.report.stopping) << "nothing left to drain";
  // Not at the deadline either: a drain with nothing left does not time out.
  Decision late = cluster.decideAt(700 * kSecond);
  EXPECT_FALSE(actionFor(late)) << reportOf(late);
  EXPECT_TRUE(late.drains.empty());
}

// The status of an earlier assignment of the job on the node (its agent has not rewritten it for
// this one yet) says nothing of this one: an old "exited" does not make the job over.
TEST(Drain, AnExitOfAnEarlierAssignmentDoesNotEndTheJob) {
  Cluster cluster;
  AssignmentStatus old;
  old.state = "applied";
  old.leaderRevision = kLeaderRev - 4;
  old.worker = "exited";
  cluster.store.put(statusKey("n1", "pair"), encodeStatus(old));
  cluster.drain("n1");
  EXPECT_EQ(jobsToDrain(cluster.store.read(cluster.memory), "n1"), std::vector<std::string>{"pair"});
}

// A job that holds the node's resources without a worker command has no step to stop at: moved at
// once, in the first round.
TEST(Drain, AJobHoldingResourcesWithoutAWorkerIsMovedAtOnce) {
  Cluster cluster(/*running=*/false);
  cluster.said("n1", "none");
  cluster.said("n2", "none");
  cluster.drain("n1");
  EXPECT_EQ(jobsToDrain(cluster.store.read(cluster.memory), "n1"), std::vector<std::string>{"pair"});
  Decision d = cluster.decideAt(0);
  const ContractAction *a = actionFor(d);
  ASSERT_TRUE(a) << reportOf(d);
  EXPECT_EQ(a->kind, ContractAction::Kind::Place);
  EXPECT_EQ(eventPut(*a), "drain of n1: placed again on n2,n3");
  EXPECT_EQ(keysRemoved(*a), std::vector<std::string>{assignmentKey("n1", "pair")});
  EXPECT_EQ(d.report.placed, std::vector<std::string>{"pair -> n2,n3 (drain of n1)"});
}

// What the Drain RPC checks before it accepts a drain: the jobs a drain would move, and whether
// each can be placed whole on the other nodes as the cluster is now.
TEST(Drain, ADrainIsBlockedOnlyByAJobThatCannotBePlacedWholeElsewhere) {
  Cluster cluster;
  ManualClock clock(0, kWallUs);
  ClusterState state = cluster.store.read(cluster.memory);
  EXPECT_EQ(jobsToDrain(state, "n1"), std::vector<std::string>{"pair"});
  EXPECT_EQ(jobsToDrain(state, "n2"), std::vector<std::string>{"pair"});
  EXPECT_TRUE(jobsToDrain(state, "n3").empty());
  EXPECT_TRUE(drainBlockers(state, "n1", cluster.memory, clock, options(), kLeaderRev).empty())
      << "pair fits on n2 and n3";

  cluster.store.put(cordonKey("n3"), encodeCordon({"operator", "repair", kLeaderRev, kStartMs}));
  state = cluster.store.read(cluster.memory);
  std::vector<std::string> blockers = drainBlockers(state, "n1", cluster.memory, clock, options(), kLeaderRev);
  ASSERT_EQ(blockers.size(), 1u);
  EXPECT_TRUE(llvm::StringRef(blockers[0]).starts_with("pair: ")) << blockers[0];
  EXPECT_TRUE(drainBlockers(state, "n3", cluster.memory, clock, options(), kLeaderRev).empty())
      << "nothing to move off n3";
}

namespace {

// n's agent publishes a failed verdict with its registration.
void failed(Cluster &cluster, const std::string &node) {
  Registration r{"test", test::recordedNodeYaml()};
  r.health = NodeHealth{HealthLevel::Failed, {{"ERR_HEALTH_001", "thermal sensor 'x86_pkg_temp' at 105.0 C"}}};
  cluster.store.put(std::string(kNodesPrefix) + node, encodeRegistration(r));
}

bool reportStartsWith(const Decision &d, const std::string &prefix) {
  return std::any_of(d.report.drains.begin(), d.report.drains.end(),
                     [&](const std::string &line) { return llvm::StringRef(line).starts_with(prefix); });
}

} // namespace

// health.drain_on: a node whose verdict the config names is drained by the leader itself, as an
// operator's unforced drain: cordoned, a record with the config's deadline, then the same rounds.
TEST(Drain, ANodeWhoseVerdictTheConfigDrainsForIsDrainedByPolicy) {
  Cluster cluster;
  cluster.store.put(kConfigKey, encodeConfig({"test", "cluster: c\nhealth: { drain_on: [failed], drain_deadline: 2min }\n"}));
  failed(cluster, "n1");
  Decision d = cluster.decideAt(0);
  ASSERT_EQ(d.drains.size(), 1u) << reportOf(d);
  EXPECT_EQ(d.drains[0].node, "n1");
  EXPECT_EQ(d.drains[0].readModRevision, 0) << "written only while the node has no drain";
  std::string why;
  std::optional<Drain> drain = decodeDrain(d.drains[0].op.value, why);
  ASSERT_TRUE(drain) << why;
  EXPECT_EQ(*drain, (Drain{kLeaderRev, kStartMs, kStartMs + 120'000, false, false})) << "never forced";
  ASSERT_EQ(d.cordons.size(), 1u) << "drained nodes are cordoned";
  EXPECT_EQ(d.cordons[0].node, "n1");
  EXPECT_TRUE(reportSays(d, "n1: drained by policy (health failed)")) << reportOf(d);
  EXPECT_TRUE(d.report.stopping);

  cluster.commit(d);
  Decision next = cluster.decideAt(kSecond);
  EXPECT_TRUE(next.drains.empty()) << "one drain a node";
  const ContractAction *ask = actionFor(next);
  ASSERT_TRUE(ask) << reportOf(next);
  EXPECT_EQ(ask->kind, ContractAction::Kind::Stop) << "then the rounds of any drain";
}

TEST(Drain, APolicyDrainWaitsWhileAJobThereCannotBePlacedWholeElsewhere) {
  Cluster cluster;
  cluster.store.put(kConfigKey, encodeConfig({"test", "cluster: c\nhealth: { drain_on: [failed] }\n"}));
  cluster.store.put(cordonKey("n3"), encodeCordon({"operator", "PSU swap", kLeaderRev, kStartMs}));
  failed(cluster, "n1");
  Decision d = cluster.decideAt(0);
  EXPECT_TRUE(d.drains.empty()) << reportOf(d);
  EXPECT_EQ(d.cordons.size(), 1u) << "cordoned all the same";
  EXPECT_TRUE(reportStartsWith(d, "n1: not drained by policy while a job there cannot be placed whole on the other "
                                  "nodes (pair: "))
      << reportOf(d);
  cluster.commit(d);
  Decision again = cluster.decideAt(kSecond);
  EXPECT_TRUE(again.drains.empty());
  EXPECT_TRUE(again.report.drains.empty()) << "said once: " << reportOf(again);
  // The spare node back: the drain goes ahead.
  cluster.store.remove(cordonKey("n3"));
  Decision now = cluster.decideAt(2 * kSecond);
  ASSERT_EQ(now.drains.size(), 1u) << reportOf(now);
  EXPECT_EQ(now.drains[0].node, "n1");
}

} // namespace msc::cluster
