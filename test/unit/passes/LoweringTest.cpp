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

// Everything a claim holds, compared member by member (Claims' defaulted ==), after what only the
// compile side can know is cleared: where each claim was written and how it was spelled. A member
// added to a claim is compared here without a word of this test changing.
admission::Claims withoutSources(admission::Claims c) {
  c.contractAt = {};
  for (admission::RoleClaims &r : c.roles) {
    r.cpusAt = r.numaAt = {};
    if (r.gpu) {
      r.gpu->at = r.gpu->divisionAt = {};
      r.gpu->written.clear();
      r.gpu->divisionSetBy.clear();
    }
    if (r.hugepages)
      r.hugepages->at = {};
    if (r.block) {
      r.block->at = r.block->ioDepthAt = {};
      r.block->written.clear();
    }
    if (r.rdma) {
      r.rdma->primary.at = r.rdma->linkLayerAt = {};
      if (r.rdma->failover)
        r.rdma->failover->at = {};
    }
  }
  return c;
}

// The plan's claims of `source` on `topology`, after checking that the compiler's are the same.
admission::Claims expectSameClaims(const char *source, const std::string &topology) {
  auto c = compile(source, topology);
  EXPECT_TRUE(c->module && c->topology);
  if (!c->module || !c->topology)
    return {};
  PassManager pm = PassManager::defaultPipeline();
  CheckedContract checked = pm.check(c->contract(), &*c->topology, admission::Held{}, c->diags);
  EXPECT_TRUE(checked.accepted);
  admission::Claims fromIr = withoutSources(checked.claims);
  admission::Claims fromPlan = withoutSources(admission::claimsFromPlan(
      lowerToPlan(c->contract(), checked.placement, checked.decisions, *c->topology, "test")));
  EXPECT_EQ(fromIr.roles.size(), fromPlan.roles.size());
  for (size_t i = 0; i < fromIr.roles.size() && i < fromPlan.roles.size(); ++i)
    EXPECT_TRUE(fromIr.roles[i] == fromPlan.roles[i]) << "role " << fromIr.roles[i].role;
  EXPECT_TRUE(fromIr == fromPlan);
  return fromPlan;
}

// Every kind of claim, each field set: GPU memory per GPU, a hugepage shortfall reserved, a link
// layer and a failover port; a block device and its queue depth on a node that has NVMe.
TEST(Lowering, BothSidesBuildTheSameClaimsFieldByField) {
  expectSameClaims(kTenant, yamlFixture());
  admission::Claims every = expectSameClaims(R"(import "profiles/mlvm.msc";
contract every uses profile mlvm_heavy {
  gpu_memory = 8GiB;
  auto_allocate_hugepages = true;
  io_topology {
    image_loader { cpu_cores = [48, 176, 49]; numa_node = 3; }
    patch_embed  { gpu = 0000:03:00.0; sm_slices = 2; }
    rdma_cache   { rdma_port = "mlx5_0:1"; failover_port = "mlx5_1:1"; link_layer = infiniband;
                   memory_pool = hugepages(2MiB, count = 2048); queue_pairs = 4; }
  }
}
)",
                   yamlFixture());
  admission::Claims reader = expectSameClaims(R"(import "profiles/mlvm.msc";
contract reader uses profile mlvm_light {
  io_topology { reader { cpu_cores = [2, 3]; io_queue = "/dev/nvme1n1"; io_depth = 64; } }
}
)",
                   std::string(MSC_SOURCE_DIR) + "/test/lit/passes/Inputs/g4dn-nvme-on-gpu-root.yaml");
  // The fields the comparison covers are set, not left at their defaults on both sides.
  ASSERT_EQ(every.roles.size(), 3u);
  ASSERT_TRUE(every.roles[1].gpu && every.roles[2].hugepages && every.roles[2].rdma);
  EXPECT_TRUE(every.roles[1].gpu->memoryPerGpu);
  EXPECT_EQ(every.roles[1].gpu->memoryBytes, 8ull << 30);
  EXPECT_EQ(every.roles[2].hugepages->shortfall, admission::HugepageClaim::Shortfall::Reserve);
  EXPECT_EQ(every.roles[2].rdma->linkLayer, "infiniband");
  ASSERT_TRUE(every.roles[2].rdma->failover);
  EXPECT_EQ(every.roles[2].rdma->failover->device, "mlx5_1");
  ASSERT_EQ(reader.roles.size(), 1u);
  ASSERT_TRUE(reader.roles[0].block);
  EXPECT_EQ(reader.roles[0].block->device, "nvme1n1");
  EXPECT_EQ(reader.roles[0].block->ioDepth, 64u);
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
