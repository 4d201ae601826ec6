// The order in which placement chooses nodes: prefilter, best fit, names; one class of like nodes
// checked once; the scaling policy's fallback; what it reports when the job does not fit.
#include "cluster/placement/Placer.h"
#include "PlacementTestUtil.h"

#include <algorithm>

namespace msc::cluster::test {
namespace {

// A plan holding GPU 0 of `file`'s machine, as admitted by an earlier job.
plan::Plan gpu0Holder(const char *file) {
  Diags d;
  NodeRegistry one;
  one.add("n", machine(file), d.engine);
  ir::Contract holder = contractOf("import \"profiles/mlvm.msc\";\n"
                                   "contract holder uses profile mlvm_light { io_topology { t { gpu = 0; } } }\n",
                                   d);
  PlacementResult r = Placer(one, "test").place(holder, d.engine);
  EXPECT_TRUE(r.placed()) << testing::PrintToString(d.codes());
  return r.placed() ? r.nodes.front().plan : plan::Plan();
}

TEST(Placer, BestFitThenName) {
  Diags d;
  NodeRegistry reg;
  // Registered out of order: the choice must not depend on it.
  reg.add("jrc-b", machine(kJrc), d.engine);
  reg.add("jwb-b", machine(kJwb), d.engine);
  reg.add("jrc-a", machine(kJrc), d.engine);
  reg.add("jwb-a", machine(kJwb), d.engine);
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText(3, 4), d), d.engine);
  // Equal GPUs to spare (none); JUWELS nodes have fewer cores to spare (48 against 128).
  EXPECT_EQ(names(r), (std::vector<std::string>{"jwb-a", "jwb-b", "jrc-a"}));
  EXPECT_TRUE(d.codes().empty()) << testing::PrintToString(d.codes());
  // Two machine types, each checked once.
  EXPECT_EQ(r.checked, 2u);
}

TEST(Placer, NodeHoldingAGpuIsSkippedOrUsedFirst) {
  Diags d;
  NodeRegistry reg;
  reg.add("a", machine(kJwb), d.engine);
  reg.add("b", machine(kJwb), d.engine);
  reg.add("c", machine(kJwb), d.engine);
  ASSERT_TRUE(reg.admit("b", gpu0Holder(kJwb), "test", d.engine));
  EXPECT_EQ(reg.find("b")->capacity.freeGpus, 3u);
  Placer placer(reg, "test");
  PlacementResult four = placer.place(contractOf(jobText(2, 4), d), d.engine);
  EXPECT_EQ(names(four), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(four.prefiltered, 1u);
  PlacementResult one = placer.place(contractOf(jobText(1, 1), d), d.engine);
  EXPECT_EQ(names(one), (std::vector<std::string>{"b"}));
  ASSERT_EQ(one.nodes.front().plan.gpu_slices_size(), 1);
  EXPECT_EQ(one.nodes.front().plan.gpu_slices(0).gpu_index(), 1u);
}

TEST(Placer, SameInputsSameNodesSameBytes) {
  Diags d;
  NodeRegistry reg;
  for (const char *n : {"n3", "n1", "n2", "n4"})
    reg.add(n, machine(n[1] % 2 ? kJwb : kJrc), d.engine);
  ir::Contract job = contractOf(jobText(4, 4, "affinity_policy = pcie_domain_first; cross_domain_io = false;"), d);
  PlacementResult a = Placer(reg, "test").place(job, d.engine);
  PlacementResult b = Placer(reg, "test").place(job, d.engine);
  ASSERT_EQ(names(a), names(b));
  ASSERT_EQ(a.nodes.size(), 4u);
  for (size_t i = 0; i < a.nodes.size(); ++i)
    EXPECT_EQ(a.nodes[i].plan.SerializeAsString(), b.nodes[i].plan.SerializeAsString());
}

TEST(Placer, ComputeHeavyFallsBackIoHeavyDoesNot) {
  Diags d;
  NodeRegistry reg;
  reg.add("jrc0386", machine(kJrc0386), d.engine); // ports of mlx5_0/1 down
  PlacementResult compute = Placer(reg, "test").place(contractOf(jobText(1, 4), d), d.engine);
  ASSERT_TRUE(compute.placed()) << testing::PrintToString(d.codes());
  EXPECT_TRUE(compute.nodes.front().crossedDomains);
  Diags io;
  PlacementResult strict =
      Placer(reg, "test").place(contractOf(jobText(1, 4, "cross_domain_io = false;"), io), io.engine);
  EXPECT_FALSE(strict.placed());
  EXPECT_EQ(io.codes(), (std::vector<std::string>{"ERR_PLACE_001"}));
  EXPECT_NE(io.consumer.diags.front().message.find("closest: node 'jrc0386': no free GPU with an HCA on its root complex"),
            std::string::npos)
      << io.consumer.diags.front().message;
}

TEST(Placer, MoreNodesThanRegistered) {
  Diags d;
  NodeRegistry reg;
  reg.add("a", machine(kJwb), d.engine);
  ir::Contract job = contractOf(jobText(2, 1), d);
  PlacementResult r = Placer(reg, "test").place(job, d.engine);
  EXPECT_FALSE(r.placed());
  EXPECT_EQ(d.codes(), (std::vector<std::string>{"ERR_PLACE_002"}));
  EXPECT_EQ(r.checked, 0u);
}

TEST(NodeRegistry, NamesAreUnique) {
  Diags d;
  NodeRegistry reg;
  EXPECT_TRUE(reg.add("a", machine(kJwb), d.engine));
  EXPECT_FALSE(reg.add("a", machine(kJrc), d.engine));
  EXPECT_FALSE(reg.admit("b", plan::Plan(), "--admitted", d.engine));
  EXPECT_EQ(d.codes(), (std::vector<std::string>{"ERR_PLACE_004", "ERR_PLACE_003"}));
  EXPECT_EQ(reg.size(), 1u);
}

} // namespace
} // namespace msc::cluster::test
