// What placement reads from a contract: the per-node counts the prefilter compares, whether the job
// is IO-heavy (the scaling policy), and the strict variant every job is tried with first.
#include "cluster/placement/JobShape.h"
#include "PlacementTestUtil.h"

namespace msc::cluster::test {
namespace {

TEST(JobShape, CountsWhatBindingNeedsFree) {
  Diags d;
  ir::Contract c = contractOf("import \"profiles/mlvm.msc\";\n"
                              "contract j uses profile mlvm_light {\n  nodes = 3;\n  io_topology {\n"
                              "    a { gpu = any; rdma_port = nearest; cpu_cores = 4 local; }\n"
                              "    b { gpu = 1; cpu_cores = 2 local; }\n  }\n}\n",
                              d);
  JobShape s = shapeOf(c);
  EXPECT_EQ(s.nodes, 3u);
  EXPECT_EQ(s.gpus, 2u);
  EXPECT_EQ(s.anyGpus, 1u);
  EXPECT_EQ(s.localCores, 6u);
  EXPECT_TRUE(s.wantsHca);
  EXPECT_FALSE(s.ioHeavy);
}

TEST(JobShape, NodesDefaultsToOne) {
  Diags d;
  std::string text = jobText(1, 1);
  text.replace(text.find("  nodes = 1;\n"), 13, "");
  EXPECT_EQ(shapeOf(contractOf(text, d)).nodes, 1u);
}

TEST(JobShape, IoHeavyFromNvmeGdsOrPolicy) {
  Diags d;
  ir::Contract nvme = contractOf("import \"profiles/mlvm.msc\";\n"
                                 "contract j uses profile mlvm_light {\n  io_topology {\n"
                                 "    loader { gpu = any; io_queue = \"/dev/nvme0n1\"; }\n  }\n}\n",
                                 d);
  EXPECT_TRUE(shapeOf(nvme).ioHeavy);
  EXPECT_EQ(shapeOf(nvme).ioReason, "role 'loader' reads /dev/nvme0n1");
  EXPECT_TRUE(shapeOf(contractOf(jobText(1, 1, "cross_domain_io = false;"), d)).ioHeavy);
  EXPECT_FALSE(shapeOf(contractOf(jobText(1, 1, "cross_domain_io = true;"), d)).ioHeavy);
}

TEST(JobShape, IoHeavyNamesWhoSetThePolicy) {
  Diags d;
  EXPECT_EQ(shapeOf(contractOf(jobText(1, 1, "cross_domain_io = false;"), d)).ioReason,
            "the contract sets cross_domain_io = false");
  // A default filled in from elsewhere (the cluster config) names itself in the field's origin.
  ir::Contract filled = contractOf(jobText(1, 1), d);
  filled.body.policy.cross_domain_io = ir::Field<bool>{false, ir::Origin{"cluster config 'booster'", {}, {}}};
  EXPECT_EQ(shapeOf(filled).ioReason, "cluster config 'booster' sets cross_domain_io = false");
}

TEST(JobShape, PrefilterSaysWhy) {
  Diags d;
  JobShape s = shapeOf(contractOf(jobText(1, 4), d));
  EXPECT_EQ(prefilter(s, {4, 10, 1}), "");
  EXPECT_EQ(prefilter(s, {3, 10, 1}), "3 free GPUs, the job needs 4 per node");
  EXPECT_EQ(prefilter(s, {4, 10, 0}), "no RDMA device with a usable port");
}

TEST(JobShape, StrictVariantKeepsAChosenAffinity) {
  Diags d;
  ir::Contract plain = strictVariant(contractOf(jobText(1, 1), d));
  ASSERT_TRUE(plain.body.policy.affinity_policy && plain.body.policy.cross_domain_io);
  EXPECT_EQ(plain.body.policy.affinity_policy->value, "pcie_domain_first");
  EXPECT_FALSE(plain.body.policy.cross_domain_io->value);
  ir::Contract numa = strictVariant(contractOf(jobText(1, 1, "affinity_policy = numa_first;"), d));
  EXPECT_EQ(numa.body.policy.affinity_policy->value, "numa_first");
  EXPECT_FALSE(numa.body.policy.cross_domain_io->value);
}

} // namespace
} // namespace msc::cluster::test
