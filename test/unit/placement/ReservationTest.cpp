// PCIe domains reserved on a node (the cluster config's pcie_domains.reserved): binding goes around
// their GPUs, the prefilter does not count them, a job that names one of their devices is refused
// on that node with the reservation as the reason, and nodes reserved differently are not one class.
#include "cluster/placement/Placer.h"
#include "PlacementTestUtil.h"

namespace msc::cluster::test {
namespace {

// JUWELS Booster: GPU 0 (0000:03:00.0) and mlx5_0 under domain 0000:00, GPU 1 and mlx5_1 under 0000:40.
Reservation domain00() { return Reservation{{PciBus{0, 0x00}}, "cluster config 'booster'"}; }

std::string oneRole(const std::string &fields) {
  return "import \"profiles/mlvm.msc\";\ncontract job uses profile mlvm_light {\n  io_topology { r0 { " + fields +
         " } }\n}\n";
}

TEST(Reservation, HeldAndCounted) {
  Diags d;
  NodeRegistry reg;
  reg.add("n1", machine(kJwb), d.engine);
  ASSERT_TRUE(reg.reserve("n1", domain00(), d.engine));
  const NodeState &n1 = *reg.find("n1");
  EXPECT_EQ(n1.capacity.freeGpus, 3u);
  EXPECT_EQ(n1.capacity.reservedGpus, 1u);
  EXPECT_EQ(n1.capacity.usableHcas, 3u);
  EXPECT_EQ(n1.capacity.reservedHcas, 1u);
  ASSERT_EQ(n1.held.contracts.size(), 1u);
  EXPECT_EQ(n1.held.contracts[0].contract, "PCIe domain 0000:00, reserved");
  ASSERT_EQ(n1.held.contracts[0].roles.size(), 1u);
  EXPECT_EQ(n1.held.contracts[0].roles[0].gpu->pci.str(), "0000:03:00.0");
  EXPECT_EQ(n1.held.contracts[0].roles[0].gpu->sms, 108u);
  // Reserving again replaces; an empty reservation gives everything back.
  ASSERT_TRUE(reg.reserve("n1", Reservation{}, d.engine));
  EXPECT_EQ(reg.find("n1")->capacity.freeGpus, 4u);
  EXPECT_TRUE(reg.find("n1")->held.contracts.empty());
  EXPECT_FALSE(reg.reserve("n9", domain00(), d.engine));
  EXPECT_EQ(d.codes(), std::vector<std::string>{"ERR_PLACE_003"});
}

TEST(Reservation, AnyGpuBindsAroundIt) {
  Diags d;
  NodeRegistry reg;
  reg.add("n1", machine(kJwb), d.engine);
  reg.reserve("n1", domain00(), d.engine);
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText(1, 1), d), d.engine);
  ASSERT_TRUE(r.placed()) << testing::PrintToString(d.codes());
  ASSERT_EQ(r.nodes.front().plan.gpu_slices_size(), 1);
  EXPECT_EQ(r.nodes.front().plan.gpu_slices(0).gpu_index(), 1u);
  ASSERT_EQ(r.nodes.front().roles.size(), 1u);
  EXPECT_EQ(r.nodes.front().roles[0].rdma, "nearest; PIX from GPU 1");
}

TEST(Reservation, NamedGpuRefusedWithTheReason) {
  Diags d;
  NodeRegistry reg;
  reg.add("n1", machine(kJwb), d.engine);
  reg.reserve("n1", domain00(), d.engine);
  PlacementResult r = Placer(reg, "test").place(contractOf(oneRole("gpu = 0000:03:00.0;"), d), d.engine);
  EXPECT_FALSE(r.placed());
  ASSERT_EQ(d.codes(), std::vector<std::string>{"ERR_PLACE_001"});
  const Diagnostic &refusal = d.consumer.diags.front();
  EXPECT_NE(refusal.message.find("closest: node 'n1': role 'r0' would use GPU 0000:03:00.0 in PCIe domain 0000:00, "
                                 "reserved by cluster config 'booster'"),
            std::string::npos)
      << refusal.message;
  // The note points at the request in the contract.
  ASSERT_FALSE(refusal.notes.empty());
  EXPECT_TRUE(refusal.notes.front().loc.hasRange());
  EXPECT_EQ(refusal.notes.front().message, "node 'n1' fails here");
}

TEST(Reservation, NamedHcaRefused) {
  Diags d;
  NodeRegistry reg;
  reg.add("n1", machine(kJwb), d.engine);
  reg.reserve("n1", domain00(), d.engine);
  PlacementResult r =
      Placer(reg, "test").place(contractOf(oneRole("gpu = any; rdma_port = \"mlx5_0:1\";"), d), d.engine);
  EXPECT_FALSE(r.placed());
  ASSERT_EQ(d.codes(), std::vector<std::string>{"ERR_PLACE_001"});
  EXPECT_NE(d.consumer.diags.front().message.find("role 'r0' would use RDMA device mlx5_0 in PCIe domain 0000:00"),
            std::string::npos)
      << d.consumer.diags.front().message;
}

TEST(Reservation, PrefilterSaysWhatIsReserved) {
  Diags d;
  NodeRegistry reg;
  reg.add("n1", machine(kJwb), d.engine);
  reg.reserve("n1", domain00(), d.engine);
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText(1, 4), d), d.engine);
  EXPECT_FALSE(r.placed());
  EXPECT_EQ(r.prefiltered, 1u);
  ASSERT_EQ(d.codes(), std::vector<std::string>{"ERR_PLACE_001"});
  EXPECT_NE(d.consumer.diags.front().message.find(
                "closest: node 'n1': 3 free GPUs (1 more in reserved PCIe domains), the job needs 4 per node"),
            std::string::npos)
      << d.consumer.diags.front().message;
}

TEST(Reservation, NodesReservedDifferentlyAreCheckedApart) {
  Diags d;
  NodeRegistry reg;
  reg.add("a", machine(kJwb), d.engine);
  reg.add("b", machine(kJwb), d.engine);
  reg.reserve("a", domain00(), d.engine);
  // A job naming GPU 0 fits only the node without the reservation; the class of `a` is not `b`'s.
  PlacementResult r = Placer(reg, "test").place(contractOf(oneRole("gpu = 0;"), d), d.engine);
  ASSERT_TRUE(r.placed()) << testing::PrintToString(d.codes());
  EXPECT_EQ(r.nodes.front().node->name, "b");
  EXPECT_EQ(r.checked, 2u);
}

} // namespace
} // namespace msc::cluster::test
