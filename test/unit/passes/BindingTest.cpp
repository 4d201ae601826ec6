// Binding: the ranking of GPU/HCA pairs under each policy, and binding on a recorded node.
#include "PassesTestUtil.h"

#include "passes/Binding.h"

namespace msc::passes::test {
namespace {

PairCandidate pair(unsigned gpu, std::string hca, hal::LinkClass::Kind link, bool oneRootComplex = true,
                   bool shared = false) {
  PairCandidate c;
  c.gpuIndex = gpu;
  c.hca = std::move(hca);
  c.link = link;
  c.oneRootComplex = oneRootComplex;
  c.hcaShared = shared;
  return c;
}

TEST(BindingRank, DomainFirstPrefersOneRootComplexThenTheCloserLink) {
  PairCandidate gpu0Sys = pair(0, "mlx5_1", hal::LinkClass::Sys, false);
  PairCandidate gpu2Pix = pair(2, "mlx5_2", hal::LinkClass::Pix);
  PairCandidate gpu1Pxb = pair(1, "mlx5_1", hal::LinkClass::Pxb);
  EXPECT_TRUE(betterPair(gpu2Pix, gpu0Sys, true));
  EXPECT_TRUE(betterPair(gpu2Pix, gpu1Pxb, true));
  EXPECT_TRUE(betterPair(gpu1Pxb, gpu0Sys, true));
  EXPECT_FALSE(betterPair(gpu0Sys, gpu2Pix, true));
}

TEST(BindingRank, OtherPoliciesTakeTheLowestGpuFirst) {
  PairCandidate gpu0Sys = pair(0, "mlx5_1", hal::LinkClass::Sys, false);
  PairCandidate gpu2Pix = pair(2, "mlx5_2", hal::LinkClass::Pix);
  EXPECT_TRUE(betterPair(gpu0Sys, gpu2Pix, false));
  // Within one GPU, the nearest HCA.
  EXPECT_TRUE(betterPair(pair(0, "mlx5_0", hal::LinkClass::Pix), gpu0Sys, false));
}

TEST(BindingRank, TiesGoToAnUnsharedHcaThenTheLowestNumbers) {
  PairCandidate shared = pair(0, "mlx5_0", hal::LinkClass::Pix, true, true);
  PairCandidate unshared = pair(1, "mlx5_1", hal::LinkClass::Pix);
  EXPECT_TRUE(betterPair(unshared, shared, true));
  EXPECT_TRUE(betterPair(pair(1, "mlx5_0", hal::LinkClass::Pix), pair(1, "mlx5_1", hal::LinkClass::Pix), true));
  EXPECT_TRUE(betterPair(pair(1, "mlx5_1", hal::LinkClass::Pix), pair(2, "mlx5_1", hal::LinkClass::Pix), true));
  // Strict: a candidate is not better than itself.
  EXPECT_FALSE(betterPair(unshared, unshared, true));
  EXPECT_FALSE(betterPair(unshared, unshared, false));
}

TEST(Binding, FourRolesGetFourGpusEachWithItsPixHca) {
  auto c = compile(R"(import "profiles/mlvm.msc";
contract four uses profile mlvm_light {
  io_topology {
    a { gpu = any; rdma_port = nearest; } b { gpu = any; rdma_port = nearest; }
    c { gpu = any; rdma_port = nearest; } d { gpu = any; rdma_port = nearest; }
  }
  policy { affinity_policy = pcie_domain_first; cross_domain_io = false; }
}
)",
                   fixture("hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"));
  ASSERT_TRUE(c->module && c->topology);
  ASSERT_TRUE(hasUnboundRequests(c->contract()));
  BoundContract bound = bindContract(c->contract(), *c->topology, admission::Held{}, c->diags);
  EXPECT_TRUE(c->codes().empty());
  EXPECT_FALSE(hasUnboundRequests(bound.contract));
  for (unsigned i = 0; i < 4; ++i) {
    const ir::RoleFields &f = bound.contract.body.roles[i].fields;
    ASSERT_TRUE(f.gpu && f.rdma_port);
    EXPECT_EQ(f.gpu->value.form, ir::GpuRef::Form::Index);
    EXPECT_EQ(f.gpu->value.index, i);
    EXPECT_EQ(f.rdma_port->value.device, "mlx5_" + std::to_string(i));
    EXPECT_EQ(bound.bindings[bound.contract.body.roles[i].name].gpu, "any; PIX with mlx5_" + std::to_string(i));
  }
  // Printed, the bound contract names the devices and says where they came from.
  std::string text;
  llvm::raw_string_ostream os(text);
  ir::print(bound.contract, os);
  EXPECT_NE(text.find("gpu = 2"), std::string::npos) << text;
  EXPECT_NE(text.find("// contract four, bound: any; PIX with mlx5_2"), std::string::npos) << text;
  EXPECT_NE(text.find("rdma_port = \"mlx5_2:1\""), std::string::npos) << text;
}

} // namespace
} // namespace msc::passes::test
