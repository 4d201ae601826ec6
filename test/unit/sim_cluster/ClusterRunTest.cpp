// The cluster in virtual time, on a few recorded nodes: the controller's own decide places the job,
// places it again when a node is lost, shrinks an elastic one, cordons lemons by policy; the
// harness's accounting is held to what each of those must cost.
#include "sim/cluster/ClusterRun.h"

#include "test/unit/RecordedNodes.h"

#include <gtest/gtest.h>

namespace msc::sim {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kHour = 3600 * kSecond;
constexpr double kHourNs = 3.6e12;

const char *kFixed = "import \"profiles/mlvm.msc\";\ncontract job uses profile mlvm_light {\n  nodes = 4;\n"
                     "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";
const char *kElastic = "import \"profiles/mlvm.msc\";\ncontract job uses profile mlvm_light {\n  nodes = 2..4;\n"
                       "  global_batch = 96 samples; micro_batch = 8 samples;\n"
                       "  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n";

FaultCause cause(Scope scope, exec::FaultClass c, double perHour) {
  return {"Test", "test cause", scope, c, perHour, "the test"};
}

ClusterSpec spec(unsigned nodes, const char *contract, std::vector<FaultCause> causes) {
  ClusterSpec s;
  s.nodes = nodes;
  s.topologyYaml = test::recordedNodeYaml();
  s.contractSource = contract;
  s.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  s.causes = std::move(causes);
  s.costs.leaseTtlNs = 10 * kSecond;
  s.costs.lostNodeGraceNs = 2 * kSecond;
  s.costs.reconcileNs = kSecond / 10;
  s.costs.crashDetectNs = kSecond;
  s.costs.hangDetectNs = 60 * kSecond;
  s.costs.restartNs = 60 * kSecond;
  s.costs.snapshotEveryNs = 1800 * kSecond;
  s.costs.repairNs = 6 * kHour;
  return s;
}

void expectTimeAddsUp(const ClusterRun &r) {
  EXPECT_NEAR(r.training + r.replayed + r.snapshots + r.detection + r.unplaced + r.restart + r.stopped, r.hours,
              1e-9 * r.hours);
  EXPECT_NEAR(r.schedulingGoodput() * r.runtimeGoodput() * r.programGoodput(), r.ettr(), 1e-12);
}

TEST(ClusterRunTest, WithoutFaultsTheJobIsPlacedOnceAndTrainsAfterItsFirstStart) {
  ClusterRun r = runCluster(spec(6, kFixed, {}), 24 * kHour, 1);
  expectTimeAddsUp(r);
  EXPECT_EQ(r.placements, 1u);
  EXPECT_EQ(r.mostNodes, 4u);
  EXPECT_EQ(r.interruptions, 0u);
  EXPECT_NEAR(r.unplaced, 0.1 / 3600, 1e-12); // the first round
  EXPECT_NEAR(r.restart, 60.0 / 3600, 1e-12); // the first start
  EXPECT_DOUBLE_EQ(r.programGoodput(), 1);
}

// Each lost node of the job costs its lease's TTL to be seen, the controller's grace and two rounds
// (the one that sees it gone, the one after the grace that places the job again on a spare), then
// a start; a fixed-size job keeps its size.
TEST(ClusterRunTest, ANodeLostIsSeenAtItsLeaseAndTheJobPlacedAgainOnASpareAfterTheGrace) {
  // Spares enough that the job never waits for a repair.
  ClusterSpec s = spec(16, kFixed, {cause(Scope::Node, exec::FaultClass::NodeLost, 1.0 / 48)});
  s.costs.repairNs = kHour;
  ClusterRun r = runCluster(s, 30 * 24 * kHour, 3);
  expectTimeAddsUp(r);
  ASSERT_GT(r.interruptions, 20u);
  EXPECT_EQ(r.workerFaults, 0u);
  EXPECT_GE(r.lostNodes, r.interruptions); // spares are lost too
  EXPECT_EQ(r.placements, r.interruptions + 1);
  double h = 1.0 / 3600;
  EXPECT_NEAR(r.detection, r.interruptions * 10 * h, 1e-9);
  EXPECT_NEAR(r.unplaced, r.interruptions * (2 + 0.2) * h + 0.1 * h, 1e-9);
  EXPECT_NEAR(r.restart, r.placements * 60 * h, 60 * h);
  EXPECT_DOUBLE_EQ(r.programGoodput(), 1);
  EXPECT_GT(r.replayed, 0);
}

// Without a spare, a fixed-size job cannot be placed whole while a node is in repair: the controller
// releases it, and places it again when the node is back. An elastic one shrinks instead, and grows
// back when the node returns.
TEST(ClusterRunTest, WithoutASpareAFixedJobWaitsForRepairsAndAnElasticOneShrinksAndGrowsBack) {
  std::vector<FaultCause> lost = {cause(Scope::Node, exec::FaultClass::NodeLost, 1.0 / 96)};
  ClusterRun fixed = runCluster(spec(4, kFixed, lost), 30 * 24 * kHour, 5);
  ClusterRun elastic = runCluster(spec(4, kElastic, lost), 30 * 24 * kHour, 5);
  expectTimeAddsUp(fixed);
  expectTimeAddsUp(elastic);
  ASSERT_GT(fixed.interruptions, 10u);
  EXPECT_GT(fixed.refusedRounds, 0u);
  // Every loss waits for its node's repair, less what the TTL and the grace took of it.
  EXPECT_GT(fixed.unplaced, 0.8 * fixed.interruptions * 6);
  EXPECT_DOUBLE_EQ(fixed.programGoodput(), 1);

  EXPECT_EQ(elastic.mostNodes, 4u);
  EXPECT_LT(elastic.unplaced, 0.1 * fixed.unplaced);
  EXPECT_LT(elastic.programGoodput(), 1);
  EXPECT_GT(elastic.programGoodput(), 0.5);
  // It grows back as each node returns: the controller's planned stop, answered by the agents, at a
  // step boundary with its snapshot (no training lost to it), then a larger placement.
  EXPECT_GT(elastic.grows, 0u);
  EXPECT_EQ(elastic.placements, 1 + elastic.interruptions + elastic.grows);
  // A grow waits for the controller's rounds and the stop step, seconds; never for the next fault.
  EXPECT_LT(elastic.unplaced, (elastic.interruptions + elastic.grows) * 10.0 / 3600);
  EXPECT_GT(elastic.ettr(), fixed.ettr());
}

// A worker fault is its node's supervisor's: seen after the crash's detection, restarted in place by
// the restart policy, no new placement. A hang takes its own, longer, detection.
TEST(ClusterRunTest, AWorkerFaultIsRestartedInPlaceAndAHangSeenAfterItsDetection) {
  ClusterRun crash = runCluster(spec(4, kFixed, {cause(Scope::Job, exec::FaultClass::WorkerCrashed, 1.0 / 24)}),
                                30 * 24 * kHour, 7);
  ClusterRun hang =
      runCluster(spec(4, kFixed, {cause(Scope::Job, exec::FaultClass::WorkerHung, 1.0 / 24)}), 30 * 24 * kHour, 7);
  expectTimeAddsUp(crash);
  expectTimeAddsUp(hang);
  ASSERT_GT(crash.interruptions, 10u);
  EXPECT_EQ(crash.workerFaults, crash.interruptions);
  EXPECT_EQ(crash.placements, 1u);
  EXPECT_EQ(crash.lostNodes, 0u);
  double h = 1.0 / 3600;
  EXPECT_NEAR(crash.detection, crash.interruptions * 1 * h, 1e-9);
  EXPECT_NEAR(hang.detection, hang.interruptions * 60 * h, 60 * h);
  EXPECT_EQ(crash.interruptions, hang.interruptions); // the same draws
  EXPECT_NEAR(crash.restart, (crash.interruptions + 1) * 60 * h, 60 * h);

  // With a warm standby per rank, a restart in place takes the standby's time; the first start is
  // cold.
  ClusterSpec withStandby = spec(4, kFixed, {cause(Scope::Job, exec::FaultClass::WorkerCrashed, 1.0 / 24)});
  withStandby.costs.standbyRestartNs = kSecond / 4;
  ClusterRun warm = runCluster(withStandby, 30 * 24 * kHour, 7);
  EXPECT_EQ(warm.interruptions, crash.interruptions);
  EXPECT_NEAR(warm.restart, (60 + warm.interruptions * 0.25) * h, 1e-9);
  EXPECT_GT(warm.ettr(), crash.ettr());
}

// Lemons fault far more often than their peers. With the cluster config's lemon rule the controller
// cordons them from their fault history, so the job, placed again after a lost node, leaves them;
// without it they stay in the job. Over the same draws the rule saves interruptions and time.
TEST(ClusterRunTest, TheLemonRuleCordonsLemonsAndTheJobMovesOffThem) {
  std::vector<FaultCause> causes = {cause(Scope::Gpu, exec::FaultClass::WorkerCrashed, 1.0 / (8 * 24 * 20)),
                                    cause(Scope::Node, exec::FaultClass::NodeLost, 1.0 / (24 * 10))};
  ClusterSpec without = spec(8, kFixed, causes);
  without.lemonNodes = 2;
  without.lemonFactor = 40;
  ClusterSpec with = without;
  with.clusterConfig = "cluster: sim\nhealth: { lemon: { faults: 3, within: 24h } }\n";
  uint64_t interruptionsWith = 0, interruptionsWithout = 0;
  double ettrWith = 0, ettrWithout = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    ClusterRun a = runCluster(with, 30 * 24 * kHour, seed);
    ClusterRun b = runCluster(without, 30 * 24 * kHour, seed);
    expectTimeAddsUp(a);
    EXPECT_GE(a.cordoned, 1u) << "seed " << seed;
    EXPECT_EQ(b.cordoned, 0u);
    interruptionsWith += a.interruptions, interruptionsWithout += b.interruptions;
    ettrWith += a.ettr(), ettrWithout += b.ettr();
  }
  EXPECT_LT(double(interruptionsWith), 0.85 * double(interruptionsWithout));
  EXPECT_GT(ettrWith, ettrWithout);
}

TEST(ClusterRunTest, TheSameSeedRunsTheSameCluster) {
  ClusterSpec s = spec(6, kElastic, {cause(Scope::Node, exec::FaultClass::NodeLost, 1.0 / 48),
                                     cause(Scope::Job, exec::FaultClass::WorkerCrashed, 1.0 / 24)});
  ClusterRun a = runCluster(s, 10 * 24 * kHour, 11), b = runCluster(s, 10 * 24 * kHour, 11);
  EXPECT_EQ(a.interruptions, b.interruptions);
  EXPECT_EQ(a.placements, b.placements);
  EXPECT_DOUBLE_EQ(a.ettr(), b.ettr());
  ClusterRun c = runCluster(s, 10 * 24 * kHour, 12);
  EXPECT_NE(a.ettr(), c.ettr());
}

} // namespace
} // namespace msc::sim
