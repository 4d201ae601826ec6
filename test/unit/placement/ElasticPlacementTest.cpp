// An elastic job (`nodes = MIN..MAX`) is placed at the largest size its global batch allows that it
// can place whole; it needs only its fewest to be placed at all, and a refusal says so.
#include "cluster/placement/Placer.h"
#include "PlacementTestUtil.h"

namespace msc::cluster::test {
namespace {

void registerNodes(NodeRegistry &reg, unsigned n, Diags &d) {
  for (unsigned i = 0; i < n; ++i)
    reg.add("n" + std::to_string(i + 1), machine(kJwb), d.engine);
}

TEST(ElasticPlacement, TakesTheLargestSizeTheClusterCanGive) {
  Diags d;
  NodeRegistry reg;
  registerNodes(reg, 3, d);
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText("2..4", 4), d), d.engine);
  EXPECT_EQ(names(r), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_TRUE(d.codes().empty()) << testing::PrintToString(d.codes());
  ASSERT_TRUE(r.placed());
  // Each node's plan says the range: its most, and its fewest.
  EXPECT_EQ(r.nodes.front().plan.provenance().nodes(), 4u);
  EXPECT_EQ(r.nodes.front().plan.provenance().min_nodes(), 2u);
  EXPECT_TRUE(r.shape.sizes.elastic());
}

TEST(ElasticPlacement, NeverMoreThanItsMost) {
  Diags d;
  NodeRegistry reg;
  registerNodes(reg, 5, d);
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText("2..4", 4), d), d.engine);
  EXPECT_EQ(r.nodes.size(), 4u);
}

TEST(ElasticPlacement, TheGlobalBatchRulesOutSizesThatDoNotSplitIt) {
  Diags d;
  NodeRegistry reg;
  registerNodes(reg, 3, d);
  // 3 nodes can take it, but 256 samples over 3 ranks leave 1: it runs at 2.
  PlacementResult r =
      Placer(reg, "test").place(contractOf(jobText("2..4; global_batch = 256 samples", 4), d), d.engine);
  EXPECT_EQ(names(r), (std::vector<std::string>{"n1", "n2"}));
  // With micro-batches of 48, 2 ranks take 144 each (3 micro-batches), 3 ranks 96 (2): 3 it is.
  PlacementResult m = Placer(reg, "test").place(
      contractOf(jobText("2..4; global_batch = 288 samples; micro_batch = 48 samples", 4), d), d.engine);
  EXPECT_EQ(m.nodes.size(), 3u);
  EXPECT_TRUE(d.codes().empty()) << testing::PrintToString(d.codes());
}

TEST(ElasticPlacement, ItsFewestMustBeRegistered) {
  Diags d;
  NodeRegistry reg;
  registerNodes(reg, 2, d);
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText("3..4", 1), d), d.engine);
  EXPECT_FALSE(r.placed());
  ASSERT_EQ(d.codes(), (std::vector<std::string>{"ERR_PLACE_002"}));
  EXPECT_EQ(d.consumer.diags.front().message, "contract 'job' needs at least 3 of 3..4 nodes, only 2 are registered");
  EXPECT_EQ(r.checked, 0u);
}

TEST(ElasticPlacement, RefusedWhenFewerThanItsFewestCanHonourIt) {
  Diags d;
  NodeRegistry reg;
  registerNodes(reg, 3, d);
  // Four GPUs a node: a job of five roles fits none, and no size of 2..3 can be placed.
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText("2..3", 5), d), d.engine);
  EXPECT_FALSE(r.placed());
  ASSERT_EQ(d.codes(), (std::vector<std::string>{"ERR_PLACE_001"}));
  EXPECT_EQ(d.consumer.diags.front().message.rfind("contract 'job' needs at least 2 of 2..3 nodes, 0 of 3", 0), 0u)
      << d.consumer.diags.front().message;
}

TEST(ElasticPlacement, AFixedSizeIsPlacedWholeOrNotAtAll) {
  Diags d;
  NodeRegistry reg;
  registerNodes(reg, 3, d);
  PlacementResult r = Placer(reg, "test").place(contractOf(jobText("4", 1), d), d.engine);
  EXPECT_FALSE(r.placed());
  ASSERT_EQ(d.codes(), (std::vector<std::string>{"ERR_PLACE_002"}));
  EXPECT_EQ(d.consumer.diags.front().message, "contract 'job' needs 4 nodes, only 3 are registered");
}

} // namespace
} // namespace msc::cluster::test
