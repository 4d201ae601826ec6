// The rules on claims alone, with no contract IR: what the node's re-check and a cluster
// controller see. The recorded JURECA-DC node of the passes' tests is the topology.
#include "admission/PlanRecheck.h"
#include "admission/Rules.h"
#include "hal/Loader.h"

#include <gtest/gtest.h>

namespace msc::admission {
namespace {

const hal::Topology &jureca() {
  static const hal::Topology topo = [] {
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    std::optional<hal::Topology> t = hal::loadTopology(
        hal::TopologySource::file(MSC_SOURCE_DIR "/test/lit/passes/Inputs/jrc0323-a100.yaml"), diags);
    EXPECT_TRUE(t) << (sink.diags.empty() ? "" : sink.diags.front().message);
    return t ? *t : hal::Topology{};
  }();
  return topo;
}

struct Judged {
  CollectingConsumer sink;
  DiagnosticEngine diags{nullptr, sink};
  RuleContext ctx{jureca(), diags, Location{{}, "tenant.msp", 0}};

  std::vector<std::string> codes() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : sink.diags)
      out.push_back(diagInfo(d.code).name.str());
    return out;
  }
};

Claims loaderOn(std::vector<unsigned> cpus, std::vector<unsigned> cores, const std::string &contract = "tenant") {
  Claims c;
  c.contract = contract;
  RoleClaims &r = c.roles.emplace_back();
  r.role = "image_loader";
  r.cpus = std::move(cpus);
  r.physicalCores = std::move(cores);
  r.numaNode = 3;
  return c;
}

TEST(Rules, ClaimsWithoutASourceRangeAreReportedAtThePlan) {
  Judged j;
  checkCpus(loaderOn({16}, {16}), j.ctx); // CPU 16 is on NUMA node 1
  ASSERT_EQ(j.codes(), std::vector<std::string>{"ERR_HAL_CPU_006"});
  EXPECT_EQ(j.sink.diags[0].loc.file, "tenant.msp");
  EXPECT_FALSE(j.sink.diags[0].loc.hasRange());
}

TEST(Rules, TwoRolesOnOneCoreAndSiblingsInOneRole) {
  Judged j;
  Claims c = loaderOn({48, 176}, {48}); // SMT siblings of core 48
  RoleClaims &other = c.roles.emplace_back();
  other.role = "decoder";
  other.cpus = {176};
  other.physicalCores = {48};
  checkCpus(c, j.ctx);
  EXPECT_EQ(j.codes(), (std::vector<std::string>{"WRN_HAL_CPU_005", "ERR_HAL_CPU_004"}));
}

TEST(Rules, HeldCoresNameTheirHolderAndTheSameNameStopsThere) {
  Held held;
  held.contracts.push_back(loaderOn({49}, {49}, "first"));
  {
    Judged j;
    checkAgainstHeld(loaderOn({48, 49}, {48, 49}), held, j.ctx);
    ASSERT_EQ(j.codes(), std::vector<std::string>{"ERR_HAL_ADMIT_001"});
    EXPECT_NE(j.sink.diags[0].message.find("contract 'first'"), std::string::npos) << j.sink.diags[0].message;
  }
  {
    Judged j;
    checkAgainstHeld(loaderOn({48, 49}, {48, 49}, "first"), held, j.ctx);
    EXPECT_EQ(j.codes(), std::vector<std::string>{"ERR_HAL_ADMIT_005"});
  }
}

Claims poolOf(uint64_t pages, HugepageClaim::Shortfall shortfall, const std::string &contract = "tenant") {
  Claims c;
  c.contract = contract;
  RoleClaims &r = c.roles.emplace_back();
  r.role = "rdma_cache";
  r.hugepages = HugepageClaim{3, 2ull << 20, pages, shortfall, {}};
  return c;
}

TEST(Rules, AHugepageShortfallIsRefusedReservedOrRefusedByTheNode) {
  { // NUMA node 3 has 1024 free 2MiB pages.
    Judged j;
    EXPECT_TRUE(checkHugepages(poolOf(1024, HugepageClaim::Shortfall::Refuse), j.ctx).empty());
    EXPECT_TRUE(j.codes().empty());
  }
  {
    Judged j;
    checkHugepages(poolOf(1100, HugepageClaim::Shortfall::Refuse), j.ctx);
    EXPECT_EQ(j.codes(), std::vector<std::string>{"ERR_HAL_HUGE_002"});
  }
  {
    Judged j;
    std::vector<HugepageReservation> r = checkHugepages(poolOf(1100, HugepageClaim::Shortfall::Reserve), j.ctx);
    EXPECT_TRUE(j.codes().empty());
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].role, "rdma_cache");
    EXPECT_EQ(r[0].pages, 76u);
  }
  {
    Judged j;
    checkHugepages(poolOf(1100, HugepageClaim::Shortfall::RefusedByNodeConfig), j.ctx);
    ASSERT_EQ(j.codes(), std::vector<std::string>{"ERR_HAL_HUGE_002"});
    EXPECT_NE(j.sink.diags[0].notes[0].message.find("auto_allocate: false"), std::string::npos);
  }
}

// Pages a held pool took are subtracted where the topology still counts them free (a recorded
// node), and not again where they are already gone from the free count (the live node).
TEST(Rules, HeldHugepagesAreCountedOnceOnEachSide) {
  Held held;
  held.contracts.push_back(poolOf(600, HugepageClaim::Shortfall::Refuse, "first"));
  Claims second = poolOf(600, HugepageClaim::Shortfall::Refuse);
  {
    Judged j;
    checkAgainstHeld(second, held, j.ctx);
    EXPECT_EQ(j.codes(), std::vector<std::string>{"ERR_HAL_ADMIT_004"});
  }
  {
    Judged j;
    held.hugepagesTakenFromFree = true;
    checkAgainstHeld(second, held, j.ctx);
    EXPECT_TRUE(j.codes().empty());
  }
}

TEST(Rules, AnRdmaClaimsLinkLayerAndFailoverAreJudgedToo) {
  Judged j;
  Claims c;
  c.contract = "tenant";
  RoleClaims &r = c.roles.emplace_back();
  r.role = "rdma_cache";
  r.rdma = RdmaClaim{{"mlx5_0", 1, {}}, RdmaPortClaim{"mlx5_9", 1, {}}, 4, "ethernet", {}};
  checkRdmaPorts(c, j.ctx);
  // The primary port is InfiniBand, not Ethernet; the failover device does not exist.
  EXPECT_EQ(j.codes(), (std::vector<std::string>{"ERR_HAL_RDMA_004", "ERR_HAL_RDMA_001"}));
}

// Two roles on the jureca node's first GPU, each claiming `memory`.
Claims twoRolesOnOneGpu(uint64_t memory, bool perGpu) {
  Claims c;
  c.contract = "tenant";
  for (const char *name : {"a", "b"}) {
    RoleClaims &r = c.roles.emplace_back();
    r.role = name;
    r.gpu = GpuClaim{};
    r.gpu->pci = jureca().gpus().front().info->pci;
    r.gpu->memoryBytes = memory;
    r.gpu->memoryPerGpu = perGpu;
  }
  return c;
}

// A plan is untrusted input: claims that would wrap a sum must not add up to something small.
TEST(Rules, HugeClaimsSaturateInsteadOfWrapping) {
  Claims c = twoRolesOnOneGpu(uint64_t(1) << 63, /*perGpu=*/false);
  EXPECT_EQ(gpuMemoryOf(c, c.roles[0].gpu->pci), UINT64_MAX);
  Judged j;
  checkGpus(c, j.ctx);
  EXPECT_EQ(j.codes(), std::vector<std::string>{"ERR_HAL_GPU_004"});
}

// The contract's per-GPU gpu_memory counts once per GPU; the roles' own limits add up.
TEST(Rules, PerGpuMemoryCountsOnceOwnMemoryAddsUp) {
  Claims c = twoRolesOnOneGpu(30ull << 30, /*perGpu=*/true);
  const PciAddress &gpu = c.roles[0].gpu->pci;
  EXPECT_EQ(gpuMemoryOf(c, gpu), 30ull << 30);
  c.roles[1].gpu->memoryPerGpu = false;
  EXPECT_EQ(gpuMemoryOf(c, gpu), 30ull << 30); // a role's own limit replaces the shared one
  c.roles[0].gpu->memoryPerGpu = false;
  EXPECT_EQ(gpuMemoryOf(c, gpu), 60ull << 30);
}

// A plan of format 1.0 does not say whether numa_node was written: its CPUs stay bound to the
// node, as they were when it was compiled. From 1.1 only a declared node binds them.
TEST(Rules, PlanClaimsBindCpusToANodeOnlyWhereTheContractDid) {
  plan::Plan p;
  p.set_format_major(1);
  p.set_format_minor(1);
  p.mutable_provenance()->set_contract("tenant");
  plan::IoBinding *b = p.add_io_bindings();
  b->set_role("image_loader");
  b->add_cpus(48);
  b->set_numa_node(3);
  EXPECT_FALSE(claimsFromPlan(p).roles[0].numaNode);
  b->set_numa_node_declared(true);
  EXPECT_EQ(claimsFromPlan(p).roles[0].numaNode, 3u);
  b->set_numa_node_declared(false);
  p.set_format_minor(0);
  EXPECT_EQ(claimsFromPlan(p).roles[0].numaNode, 3u);
}

} // namespace
} // namespace msc::admission
