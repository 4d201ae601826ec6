// Lowering: the same contract and topology give byte-identical plans; a plan's claims are the
// claims the compiler judged, so the node's re-check and the compiler see the same thing.
#include "PassesTestUtil.h"

#include "admission/Claims.h"
#include "passes/ContractClaims.h"
#include "passes/Lowering.h"
#include "plan/PlanFile.h"

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
  PassManager pm = PassManager::defaultPipeline();
  CheckedContract checked = pm.check(c.contract(), &*c.topology, admission::Held{}, c.diags);
  EXPECT_TRUE(checked.accepted);
  return lowerToPlan(c.contract(), checked.placement, checked.decisions, *c.topology, "test");
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

TEST(Lowering, ClaimsFromPlanAreWhatThePlanHolds) {
  auto c = compile(kTenant, yamlFixture());
  ASSERT_TRUE(c->module && c->topology);
  admission::Claims claims = admission::claimsFromPlan(lower(*c));
  EXPECT_EQ(claims.contract, "tenant");
  ASSERT_EQ(claims.roles.size(), 3u);
  const admission::RoleClaims &loader = claims.roles[0], &embed = claims.roles[1], &cache = claims.roles[2];
  // CPUs 48 and 176 are one core (SMT2): two physical cores, named by their first PU.
  EXPECT_EQ(loader.physicalCores, (std::vector<unsigned>{48, 49}));
  EXPECT_EQ(loader.numaNode, 3u); // declared: the CPUs must be on it
  ASSERT_TRUE(embed.gpu);
  EXPECT_EQ(embed.gpu->pci.str(), "0000:03:00.0");
  EXPECT_EQ(embed.gpu->sms, 72u); // 2 of 3 slices of 108 SMs, 36 each (Ampere: even counts)
  EXPECT_EQ(embed.gpu->memoryBytes, 10ull << 30);
  EXPECT_FALSE(embed.numaNode); // not declared: nothing binds its CPUs
  ASSERT_TRUE(cache.hugepages);
  EXPECT_EQ(cache.hugepages->numaNode, 3u); // the HCA's node
  EXPECT_EQ(cache.hugepages->pageSize, 2ull << 20);
  EXPECT_EQ(cache.hugepages->pages, 64u);
  ASSERT_TRUE(cache.rdma);
  EXPECT_EQ(cache.rdma->primary.device, "mlx5_0");
  EXPECT_EQ(cache.rdma->queuePairs, 4u);
}

// The compiler's claims and the plan's claims of one contract agree on everything the rules read;
// only the source locations differ.
TEST(Lowering, BothSidesBuildTheSameClaims) {
  auto c = compile(kTenant, yamlFixture());
  ASSERT_TRUE(c->module && c->topology);
  PassManager pm = PassManager::defaultPipeline();
  CheckedContract checked = pm.check(c->contract(), &*c->topology, admission::Held{}, c->diags);
  admission::Claims fromPlan = admission::claimsFromPlan(
      lowerToPlan(c->contract(), checked.placement, checked.decisions, *c->topology, "test"));
  const admission::Claims &fromIr = checked.claims;
  ASSERT_EQ(fromIr.roles.size(), fromPlan.roles.size());
  for (size_t i = 0; i < fromIr.roles.size(); ++i) {
    const admission::RoleClaims &a = fromIr.roles[i], &b = fromPlan.roles[i];
    SCOPED_TRACE(a.role);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.cpus, b.cpus);
    EXPECT_EQ(a.physicalCores, b.physicalCores);
    EXPECT_EQ(a.numaNode, b.numaNode);
    ASSERT_EQ(a.gpu.has_value(), b.gpu.has_value());
    if (a.gpu) {
      EXPECT_EQ(a.gpu->pci, b.gpu->pci);
      EXPECT_EQ(a.gpu->sms, b.gpu->sms);
      EXPECT_EQ(a.gpu->slices, b.gpu->slices);
      EXPECT_EQ(a.gpu->division, b.gpu->division);
      EXPECT_EQ(a.gpu->memoryBytes, b.gpu->memoryBytes);
    }
    ASSERT_EQ(a.hugepages.has_value(), b.hugepages.has_value());
    if (a.hugepages) {
      EXPECT_EQ(a.hugepages->numaNode, b.hugepages->numaNode);
      EXPECT_EQ(a.hugepages->pageSize, b.hugepages->pageSize);
      EXPECT_EQ(a.hugepages->pages, b.hugepages->pages);
    }
    ASSERT_EQ(a.rdma.has_value(), b.rdma.has_value());
    if (a.rdma) {
      EXPECT_EQ(a.rdma->primary.device, b.rdma->primary.device);
      EXPECT_EQ(a.rdma->primary.port, b.rdma->primary.port);
      EXPECT_EQ(a.rdma->queuePairs, b.rdma->queuePairs);
    }
  }
}

TEST(Lowering, PoolWithoutANumaNodeClaimsNoNode) {
  plan::Plan p;
  p.mutable_provenance()->set_contract("x");
  plan::MemoryPool *m = p.add_memory_pools();
  m->set_page_size(2 << 20);
  m->set_pages(4);
  m->set_numa_node(-1);
  admission::Claims claims = admission::claimsFromPlan(p);
  ASSERT_EQ(claims.roles.size(), 1u);
  ASSERT_TRUE(claims.roles[0].hugepages);
  EXPECT_FALSE(claims.roles[0].hugepages->numaNode);
}

} // namespace
} // namespace msc::passes::test
