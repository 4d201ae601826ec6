// The pass manager: pipelines by name, order, topology-free runs, deterministic diagnostics.
#include "PassesTestUtil.h"

#include "passes/Passes.h"

namespace msc::passes::test {
namespace {

const char *kJureca = "hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml";

// Three problems for three passes: a CPU that does not exist (cpu-numa), an RDMA device that does
// not exist (rdma), inverted thermal thresholds (thermal-policy, no topology needed).
const char *kThreeProblems = R"(import "profiles/mlvm.msc";
contract three uses profile mlvm_light {
  io_topology {
    image_loader { cpu_cores = [48, 300]; numa_node = 3; }
    rdma_cache   { rdma_port = "mlx5_9:1"; }
  }
  scaling { scale_up_below = 80C; throttle_at = 75C; }
}
)";

std::vector<std::string> names(const PassManager &pm) {
  std::vector<std::string> out;
  for (const auto &p : pm.passes())
    out.push_back(p->name().str());
  return out;
}

std::vector<std::string> run(Compiled &c, PassManager &pm, bool withTopology) {
  const hal::Topology *topo = withTopology && c.topology ? &*c.topology : nullptr;
  size_t before = c.consumer.diags.size();
  pm.check(c.contract(), topo, admission::Held{}, c.diags);
  std::vector<std::string> out;
  for (size_t i = before; i < c.consumer.diags.size(); ++i)
    out.push_back(diagInfo(c.consumer.diags[i].code).name.str());
  return out;
}

TEST(PassManager, DefaultPipelineIsTheRegistryInOrder) {
  PassManager pm = PassManager::defaultPipeline();
  EXPECT_EQ(names(pm), (std::vector<std::string>{"profile", "thermal-policy", "lending", "gpu", "pcie", "cpu-numa", "nvme",
                                                 "rdma", "hugepages", "thermal", "admission"}));
  for (const PassInfo &info : registeredPasses()) {
    auto pass = info.create();
    EXPECT_EQ(pass->name(), info.name);
    EXPECT_FALSE(pass->summary().empty()) << info.name.str();
  }
}

TEST(PassManager, FromNamesKeepsTheGivenOrderAndTrimsSpaces) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  auto pm = PassManager::fromNames("rdma, cpu-numa,profile", diags);
  ASSERT_TRUE(pm);
  EXPECT_EQ(names(*pm), (std::vector<std::string>{"rdma", "cpu-numa", "profile"}));
  EXPECT_TRUE(consumer.diags.empty());
}

TEST(PassManager, FromNamesRejectsAnUnknownNameWithTheClosest) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  EXPECT_FALSE(PassManager::fromNames("cpu-numa,hugepage", diags));
  ASSERT_EQ(consumer.diags.size(), 1u);
  EXPECT_EQ(consumer.diags[0].code, DiagCode::ERR_DRV_005);
  EXPECT_NE(consumer.diags[0].message.find("unknown pass 'hugepage'; did you mean 'hugepages'?"), std::string::npos)
      << consumer.diags[0].message;
}

TEST(PassManager, FromNamesEmptyListIsAnEmptyPipeline) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  auto pm = PassManager::fromNames("", diags);
  ASSERT_TRUE(pm);
  EXPECT_TRUE(pm->passes().empty());
}

TEST(PassManager, TopologyPassesAreSkippedWithoutATopology) {
  auto c = compile(kThreeProblems, fixture(kJureca));
  ASSERT_TRUE(c->module && c->topology);
  PassManager pm = PassManager::defaultPipeline();
  EXPECT_EQ(run(*c, pm, /*withTopology=*/false), (std::vector<std::string>{"ERR_HAL_THERM_001"}));
}

TEST(PassManager, DiagnosticsFollowThePipelineOrder) {
  auto c = compile(kThreeProblems, fixture(kJureca));
  ASSERT_TRUE(c->module && c->topology);
  PassManager pm = PassManager::defaultPipeline();
  std::vector<std::string> codes = run(*c, pm, true);
  auto pos = [&](const std::string &code) { return std::find(codes.begin(), codes.end(), code) - codes.begin(); };
  ASSERT_LT(pos("ERR_HAL_THERM_001"), static_cast<long>(codes.size()));
  EXPECT_LT(pos("ERR_HAL_THERM_001"), pos("ERR_HAL_CPU_001"));
  EXPECT_LT(pos("ERR_HAL_CPU_001"), pos("ERR_HAL_RDMA_001"));
}

TEST(PassManager, SameInputsSameDiagnosticsSameOrder) {
  auto a = compile(kThreeProblems, fixture(kJureca));
  auto b = compile(kThreeProblems, fixture(kJureca));
  ASSERT_TRUE(a->module && b->module);
  PassManager pa = PassManager::defaultPipeline(), pb = PassManager::defaultPipeline();
  std::vector<std::string> first = run(*a, pa, true), second = run(*b, pb, true);
  EXPECT_EQ(first, second);
  // And the messages, not only the codes.
  ASSERT_EQ(a->consumer.diags.size(), b->consumer.diags.size());
  for (size_t i = 0; i < a->consumer.diags.size(); ++i)
    EXPECT_EQ(a->consumer.diags[i].message, b->consumer.diags[i].message);
}

TEST(PassManager, RunReturnsFalseOnlyForErrors) {
  // A warning (far loader) but no error.
  auto c = compile(R"(import "profiles/mlvm.msc";
contract warned uses profile mlvm_light {
  io_topology {
    image_loader { cpu_cores = [2]; }
    patch_embed  { gpu = 0000:03:00.0; sm_slices = 1; }
  }
}
)",
                   fixture(kJureca));
  ASSERT_TRUE(c->module && c->topology);
  PassManager pm = PassManager::defaultPipeline();
  EXPECT_TRUE(pm.check(c->contract(), &*c->topology, admission::Held{}, c->diags).accepted);
  EXPECT_NE(std::find(c->codes().begin(), c->codes().end(), "WRN_HAL_CPU_007"), c->codes().end());
}

TEST(PassManager, PrintAfterAndTimePassesWriteToTheGivenStream) {
  auto c = compile(kThreeProblems, fixture(kJureca));
  ASSERT_TRUE(c->module && c->topology);
  std::string out;
  llvm::raw_string_ostream os(out);
  Instrumentation inst{{"gpu"}, true, &os};
  PassManager pm = PassManager::defaultPipeline();
  pm.check(c->contract(), &*c->topology, admission::Held{}, c->diags, inst);
  EXPECT_NE(out.find("placement after 'gpu' for contract 'three'"), std::string::npos) << out;
  EXPECT_EQ(out.find("placement after 'pcie'"), std::string::npos) << out;
  EXPECT_NE(out.find("pass timing report for contract 'three'"), std::string::npos) << out;
  EXPECT_NE(out.find("admission"), std::string::npos) << out;
}

} // namespace
} // namespace msc::passes::test
