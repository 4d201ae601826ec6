// RDMA: the verbs backend reports "no device" cleanly here; the sim backend's ports, failover and
// the applier's roll-back.
#include "TestUtil.h"

#include "executor/rdma/RdmaApplier.h"
#include "executor/rdma/RdmaBackends.h"
#include "executor/rdma/SimRdmaBackend.h"

#include <cstdio>
#include <fstream>

using namespace msc;
using namespace msc::exec;
using msc::exec::test::ApplyFixture;

namespace {

plan::RdmaSetting setting(std::string role = "allreduce", std::string device = "mlx5_0", unsigned port = 1) {
  plan::RdmaSetting s;
  s.set_role(std::move(role));
  s.set_device(std::move(device));
  s.set_port(port);
  s.set_queue_pairs(4);
  s.set_max_outstanding(128);
  s.set_retry_count(9);
  s.set_timeout_ns(20'000'000);
  s.set_link_layer("InfiniBand");
  s.set_failover_device("mlx5_1");
  s.set_failover_port(1);
  s.set_numa_node(-1);
  return s;
}

std::unique_ptr<SimRdmaBackend> twoNics() {
  return std::make_unique<SimRdmaBackend>(
      std::vector<SimRdmaPort>{{"mlx5_0", 1, true, "InfiniBand"}, {"mlx5_1", 1, true, "InfiniBand"}});
}

TEST(Rdma, TimeoutExponent) {
  EXPECT_EQ(ibTimeoutExponent(0), 0);
  EXPECT_EQ(ibTimeoutExponent(1), 1);
  EXPECT_EQ(ibTimeoutExponent(8192), 1);  // 4.096 us * 2
  EXPECT_EQ(ibTimeoutExponent(8193), 2);
  EXPECT_EQ(ibTimeoutExponent(20'000'000), 13); // 4.096 us * 2^13 = 33.5 ms >= 20 ms > 16.8 ms
  EXPECT_EQ(ibTimeoutExponent(uint64_t(4096) << 14), 14);
  EXPECT_EQ(ibTimeoutExponent(UINT64_MAX), 31);
  EXPECT_EQ(ibRetryCount(9), 7);
  EXPECT_EQ(ibRetryCount(3), 3);
}

TEST(Rdma, VerbsUnavailableHere) {
  VerbsProbe p = probeVerbs();
  if (p.available)
    GTEST_SKIP() << "this machine has RDMA devices: " << p.why;
  EXPECT_EQ(p.why.rfind("no RDMA devices (ibv_get_device_list: ", 0), 0u) << p.why;
  std::string why;
  EXPECT_EQ(createVerbsBackend(why), nullptr);

  BackendOptions o;
  auto auto_ = selectRdmaBackend(o, why);
  ASSERT_TRUE(auto_);
  EXPECT_EQ(auto_->name(), "sim");
  EXPECT_EQ(why.rfind("sim: no RDMA devices", 0), 0u) << why;

  ApplyFixture f;
  o.rdma = "ibverbs";
  EXPECT_EQ(selectRdmaBackend(o, why, &f.diags), nullptr);
  EXPECT_EQ(f.message(DiagCode::ERR_RDMA_001).rfind("rdma backend 'ibverbs' is not available: no RDMA devices", 0), 0u);
  o.rdma = "roce";
  EXPECT_EQ(selectRdmaBackend(o, why, &f.diags), nullptr);
  EXPECT_TRUE(f.emitted(DiagCode::ERR_RDMA_002));
}

TEST(Rdma, SimRecordsWhatVerbsWouldBeAskedFor) {
  auto b = twoNics();
  EXPECT_EQ(b->name(), "sim");
  std::string error;
  auto id = b->createQueuePairs(setting(), error);
  ASSERT_TRUE(id) << error;
  auto g = b->group(*id);
  EXPECT_EQ(g->queuePairs, 4u);
  EXPECT_EQ(g->maxSendWr, 128u);
  EXPECT_EQ(g->retryCount, 7);
  EXPECT_EQ(g->timeoutExponent, 13);
  EXPECT_FALSE(b->createQueuePairs(setting("x", "mlx5_9"), error));
  EXPECT_EQ(error, "sim: no RDMA device 'mlx5_9' port 1");
  auto eth = setting();
  eth.set_link_layer("Ethernet");
  EXPECT_FALSE(b->createQueuePairs(eth, error));
  EXPECT_NE(error.find("is InfiniBand, the plan expects Ethernet"), std::string::npos);
}

TEST(Rdma, SimFailover) {
  auto b = twoNics();
  std::string error;
  auto id = b->createQueuePairs(setting(), error);
  EXPECT_TRUE(b->portActive(*id));
  b->setPortState("mlx5_0", 1, false);
  EXPECT_FALSE(b->portActive(*id));
  b->setPortState("mlx5_1", 1, false);
  EXPECT_FALSE(b->failover(*id, error));
  EXPECT_EQ(error, "failover port 1 of 'mlx5_1' is down");
  b->setPortState("mlx5_1", 1, true);
  EXPECT_TRUE(b->failover(*id, error)) << error;
  EXPECT_TRUE(b->portActive(*id));
  EXPECT_EQ(b->group(*id)->device, "mlx5_1");
  EXPECT_TRUE(b->group(*id)->failedOver);

  auto none = setting("x");
  none.clear_failover_device();
  none.set_failover_port(0);
  auto other = b->createQueuePairs(none, error);
  EXPECT_FALSE(b->failover(*other, error));
  EXPECT_EQ(error, "the plan names no failover port");
}

TEST(Rdma, SimControlFileDropsAPort) {
  std::string path = ::testing::TempDir() + "rdma_control_" + std::to_string(::getpid());
  SimRdmaBackend b({}, path); // permissive: any device the plan names exists
  std::string error;
  auto id = b.createQueuePairs(setting(), error);
  ASSERT_TRUE(id);
  EXPECT_TRUE(b.portActive(*id));
  std::ofstream(path) << "gpu 0 fault none\nrdma mlx5_0 1 down\n";
  EXPECT_FALSE(b.portActive(*id));
  std::remove(path.c_str());
}

TEST(RdmaApplier, AppliesAndRollsBack) {
  auto b = twoNics();
  ApplyFixture f;
  *f.plan.add_rdma() = setting();
  *f.plan.add_rdma() = setting("p2p", "mlx5_1");
  auto applier = createRdmaApplier(*b, [&](const std::string &l) { f.log.push_back(l); });
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(b->liveGroups(), 2u);
  EXPECT_EQ(f.env("MSCALE_RDMA_BACKEND"), "sim");
  EXPECT_EQ(f.env("MSCALE_RDMA"), "allreduce@mlx5_0:1:4:128;p2p@mlx5_1:1:4:128");
  EXPECT_EQ(f.log[0], "backend 'sim' (simulated ports, no device is touched), 2 setting(s)");
  applier->rollback(ctx);
  EXPECT_EQ(b->liveGroups(), 0u);
  EXPECT_TRUE(f.worker.variables.empty());
}

TEST(RdmaApplier, FailureInTheSecondSettingDestroysTheFirst) {
  auto b = twoNics();
  ApplyFixture f;
  *f.plan.add_rdma() = setting();
  *f.plan.add_rdma() = setting("p2p", "mlx5_7");
  auto applier = createRdmaApplier(*b);
  auto ctx = f.context();
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_EQ(b->liveGroups(), 0u);
  EXPECT_EQ(f.message(DiagCode::ERR_RDMA_003), "cannot create 4 queue pairs for role 'p2p' on 'mlx5_7' port 1 "
                                               "(backend 'sim'): sim: no RDMA device 'mlx5_7' port 1");
}

TEST(RdmaApplier, InjectedFailure) {
  auto b = twoNics();
  ApplyFixture f;
  f.inject.failIn = "rdma";
  *f.plan.add_rdma() = setting();
  *f.plan.add_rdma() = setting("p2p", "mlx5_1");
  auto applier = createRdmaApplier(*b);
  auto ctx = f.context(true);
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_EQ(f.message(DiagCode::ERR_RDMA_004), "injected failure in the rdma applier before setting 1");
  EXPECT_EQ(b->liveGroups(), 0u);
}

TEST(RdmaApplier, PortDownFailsOverOrFails) {
  auto b = twoNics();
  b->setPortState("mlx5_0", 1, false);
  ApplyFixture f;
  *f.plan.add_rdma() = setting();
  auto applier = createRdmaApplier(*b);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(f.message(DiagCode::WRN_RDMA_001), "port 1 of 'mlx5_0' is down: role 'allreduce' moved to 'mlx5_1' port 1");
  EXPECT_EQ(f.env("MSCALE_RDMA"), "allreduce@mlx5_1:1:4:128");
  applier->rollback(ctx);

  b->setPortState("mlx5_1", 1, false);
  ApplyFixture g;
  *g.plan.add_rdma() = setting();
  auto ctx2 = g.context();
  EXPECT_FALSE(applier->apply(ctx2));
  EXPECT_EQ(g.message(DiagCode::ERR_RDMA_005),
            "port 1 of 'mlx5_0' is down and role 'allreduce' cannot fail over: failover port 1 of 'mlx5_1' is down");
  EXPECT_EQ(b->liveGroups(), 0u);
}

} // namespace

TEST(RdmaApplier, LowerCaseLinkLayerOfThePlanMatches) {
  // Plans carry the contract's spelling ("infiniband"); ports report "InfiniBand".
  auto b = twoNics();
  std::string error;
  plan::RdmaSetting s = setting();
  s.set_link_layer("infiniband");
  EXPECT_TRUE(b->createQueuePairs(s, error)) << error;
}

TEST(RdmaApplier, FaultRecoveryFailsOverOnlyTheGroupsWhosePortIsDown) {
  auto b = twoNics();
  ApplyFixture f;
  *f.plan.add_rdma() = setting();
  auto applier = createRdmaApplier(*b);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  std::vector<std::string> moved;
  std::string error;
  ASSERT_TRUE(failOverDownPorts(*applier, ctx, moved, error)) << error;
  EXPECT_TRUE(moved.empty()); // every port is up: nothing moves
  b->setPortState("mlx5_0", 1, false);
  ASSERT_TRUE(failOverDownPorts(*applier, ctx, moved, error)) << error;
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0], "role 'allreduce': 'mlx5_0' port 1 -> 'mlx5_1' port 1");
  EXPECT_EQ(f.env("MSCALE_RDMA"), "allreduce@mlx5_1:1:4:128");
  // The failover port goes down too: nowhere left to go.
  b->setPortState("mlx5_1", 1, false);
  moved.clear();
  EXPECT_FALSE(failOverDownPorts(*applier, ctx, moved, error));
  EXPECT_EQ(error, "role 'allreduce': the failover port 'mlx5_1' port 1 is down too");
  applier->rollback(ctx);
}

TEST(RdmaApplier, FaultRecoveryWithoutAFailoverPortSaysSo) {
  auto b = twoNics();
  ApplyFixture f;
  plan::RdmaSetting s = setting();
  s.clear_failover_device();
  s.set_failover_port(0);
  *f.plan.add_rdma() = s;
  auto applier = createRdmaApplier(*b);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  b->setPortState("mlx5_0", 1, false);
  std::vector<std::string> moved;
  std::string error;
  EXPECT_FALSE(failOverDownPorts(*applier, ctx, moved, error));
  EXPECT_EQ(error, "role 'allreduce' on 'mlx5_0' port 1: the plan names no failover port");
  applier->rollback(ctx);
}
