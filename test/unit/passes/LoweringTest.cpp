// Lowering: the same contract and topology give byte-identical plans; a plan's holding is what the
// admission pass needs.
#include "PassesTestUtil.h"

#include "ir/PlanFile.h"
#include "passes/Lowering.h"

namespace msc::passes::test {
namespace {

const char *kTenant = R"(import "profiles/mlvm.msc";
contract tenant uses profile mlvm_heavy {
  io_topology {
    image_loader { cpu_cores = [48, 176, 49]; numa_node = 3; }
    patch_embed  { gpu = 0000:03:00.0; sm_slices = 2; gpu_memory = 10GiB; }
    rdma_cache   { rdma_port = "mlx5_0:1"; memory_pool = hugepages(2MiB, count = 64); queue_pairs = 4; }
  }
}
)";

std::string yamlFixture() { return std::string(MSC_SOURCE_DIR) + "/test/lit/passes/Inputs/jrc0323-a100.yaml"; }

plan::Plan lower(Compiled &c) {
  Placement placement = place(c.contract(), &*c.topology);
  AdmittedSet admitted;
  PassContext ctx{c.contract(), &*c.topology, admitted, c.diags, placement};
  PassManager pm = PassManager::defaultPipeline();
  EXPECT_TRUE(pm.run(ctx));
  return lowerToPlan(c.contract(), placement, *c.topology, "test");
}

TEST(Lowering, SameInputsGiveByteIdenticalPlans) {
  auto a = compile(kTenant, yamlFixture());
  auto b = compile(kTenant, yamlFixture());
  ASSERT_TRUE(a->module && a->topology && b->module && b->topology);
  std::string first = plan::encodePlan(lower(*a));
  std::string second = plan::encodePlan(lower(*b));
  EXPECT_EQ(first, second);
  // Encoding the same message twice is stable too.
  plan::Plan p = lower(*a);
  EXPECT_EQ(plan::encodePlan(p), plan::encodePlan(p));
}

TEST(Lowering, PlanRoundTripsThroughTheFileFormat) {
  auto c = compile(kTenant, yamlFixture());
  ASSERT_TRUE(c->module && c->topology);
  plan::Plan p = lower(*c);
  EXPECT_TRUE(plan::verifyPlan(p).empty());
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  std::string bytes = plan::encodePlan(p);
  auto back = plan::decodePlan(bytes, "mem", diags);
  ASSERT_TRUE(back);
  EXPECT_EQ(plan::encodePlan(*back), bytes);
}

TEST(Lowering, HoldingFromPlanIsWhatThePlanHolds) {
  auto c = compile(kTenant, yamlFixture());
  ASSERT_TRUE(c->module && c->topology);
  plan::Plan p = lower(*c);
  Holding h = holdingFromPlan(p);
  EXPECT_EQ(h.contract, "tenant");
  // CPUs 48 and 176 are one core (SMT2): two physical cores, named by their first PU.
  EXPECT_EQ(h.physicalCores, (std::vector<unsigned>{48, 49}));
  ASSERT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.gpus[0].pci.str(), "0000:03:00.0");
  EXPECT_EQ(h.gpus[0].sms, 72u); // 2 of 3 slices of 108 SMs, 36 each (Ampere: even counts)
  EXPECT_EQ(h.gpus[0].memoryBytes, 10ull << 30);
  ASSERT_EQ(h.hugepages.size(), 1u);
  EXPECT_EQ(h.hugepages[0].numaNode, 3u); // the HCA's node
  EXPECT_EQ(h.hugepages[0].pageSize, 2ull << 20);
  EXPECT_EQ(h.hugepages[0].pages, 64u);
  ASSERT_EQ(h.queuePairs.size(), 1u);
  EXPECT_EQ(h.queuePairs[0].device, "mlx5_0");
  EXPECT_EQ(h.queuePairs[0].count, 4u);
}

TEST(Lowering, HoldingSkipsPoolsWithoutANumaNode) {
  plan::Plan p;
  p.mutable_provenance()->set_contract("x");
  plan::MemoryPool *m = p.add_memory_pools();
  m->set_page_size(2 << 20);
  m->set_pages(4);
  m->set_numa_node(-1);
  EXPECT_TRUE(holdingFromPlan(p).hugepages.empty());
}

} // namespace
} // namespace msc::passes::test
