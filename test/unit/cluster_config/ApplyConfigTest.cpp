// What the leading controller does with a published config (cluster/controller/ApplyConfig.h) and
// how it is stored (cluster/keys): scaling defaults fill only what a contract and its profiles leave
// unset, named as the config's; reserved domains reach every registered node, "*" and by name.
#include "cluster/controller/ApplyConfig.h"
#include "cluster/keys/Keys.h"
#include "driver/Compile.h"
#include "hal/Loader.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

namespace msc::cluster {
namespace {

ClusterConfig configOf(const std::string &text) {
  ConfigSource source("c.yaml", text);
  std::optional<ClusterConfig> config = parseClusterConfig(source);
  EXPECT_TRUE(config) << source.printed();
  return config.value_or(ClusterConfig{});
}

struct Compiled {
  llvm::SourceMgr sm;
  CollectingConsumer consumer;
  DiagnosticEngine diags{&sm, consumer};
  ir::Contract contract;
};

// `text` through the frontend, with the stdlib's profiles.
std::unique_ptr<Compiled> compile(const std::string &text) {
  auto out = std::make_unique<Compiled>();
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("apply-config", "msc", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << text;
  }
  driver::CompileOptions options;
  options.inputs = {path.str().str()};
  options.stdlibDir = std::string(MSC_SOURCE_DIR) + "/stdlib";
  std::optional<ir::Module> module = driver::loadContracts(options, out->sm, out->diags);
  llvm::sys::fs::remove(path);
  EXPECT_TRUE(module && !module->contracts.empty())
      << (out->consumer.diags.empty() ? std::string("no contract") : out->consumer.diags.front().message);
  if (module && !module->contracts.empty())
    out->contract = module->contracts.front();
  return out;
}

TEST(ApplyConfig, DefaultsFillOnlyWhatIsUnset) {
  ClusterConfig config = configOf("cluster: booster\nscaling: { affinity_policy: numa_first, cross_domain_io: false }\n");
  auto bare = compile("import \"profiles/mlvm.msc\";\ncontract c uses profile mlvm_light { io_topology { r { gpu = any; } } }\n");
  EXPECT_EQ(applyScalingDefaults(config, bare->contract),
            (std::vector<std::string>{"affinity_policy = numa_first", "cross_domain_io = false"}));
  const ir::PolicyFields &policy = bare->contract.body.policy;
  ASSERT_TRUE(policy.affinity_policy && policy.cross_domain_io);
  EXPECT_EQ(policy.affinity_policy->value, "numa_first");
  EXPECT_EQ(policy.affinity_policy->origin.declaration, "cluster config 'booster'");
  EXPECT_FALSE(policy.cross_domain_io->value);

  // Set by the contract: kept.
  auto own = compile("import \"profiles/mlvm.msc\";\ncontract c uses profile mlvm_light {\n"
                     "  io_topology { r { gpu = any; } }\n  policy { cross_domain_io = true; }\n}\n");
  EXPECT_EQ(applyScalingDefaults(config, own->contract), std::vector<std::string>{"affinity_policy = numa_first"});
  EXPECT_TRUE(own->contract.body.policy.cross_domain_io->value);
  // Set by a profile the contract uses (internvl2 keeps IO in the GPU's domain): kept too.
  auto profile = compile("import \"profiles/models.msc\";\ncontract c uses profile internvl2 {\n"
                         "  io_topology { patch_embed { gpu = any; } data { cpu_cores = 2 local; gpu = any; } }\n}\n");
  EXPECT_TRUE(applyScalingDefaults(config, profile->contract).empty());
  EXPECT_EQ(profile->contract.body.policy.affinity_policy->value, "pcie_domain_first");
  // A config without scaling defaults changes nothing.
  auto untouched =
      compile("import \"profiles/mlvm.msc\";\ncontract c uses profile mlvm_light { io_topology { r { gpu = any; } } }\n");
  EXPECT_TRUE(applyScalingDefaults(configOf("cluster: c\n"), untouched->contract).empty());
  EXPECT_FALSE(untouched->contract.body.policy.affinity_policy);
}

TEST(ApplyConfig, ReservedDomainsReachEveryNode) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  auto topology = hal::loadTopology(
      hal::TopologySource::file(std::string(MSC_SOURCE_DIR) +
                                "/../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"),
      diags);
  ASSERT_TRUE(topology);
  auto shared = std::make_shared<const hal::Topology>(std::move(*topology));
  NodeRegistry registry;
  registry.add("n1", shared, diags);
  registry.add("n2", shared, diags);
  ClusterConfig config = configOf("cluster: booster\npcie_domains:\n  reserved:\n"
                                  "    - { node: \"*\", domain: \"0000:00\" }\n"
                                  "    - { node: n2, domain: \"0000:40\" }\n"
                                  "    - { node: n5, domain: \"0000:40\" }\n");
  reserveDomains(config, registry, diags);
  EXPECT_TRUE(sink.diags.empty());
  EXPECT_EQ(registry.find("n1")->reservation.domains, (std::vector<PciBus>{{0, 0x00}}));
  EXPECT_EQ(registry.find("n2")->reservation.domains, (std::vector<PciBus>{{0, 0x00}, {0, 0x40}}));
  EXPECT_EQ(registry.find("n2")->reservation.by, "cluster config 'booster'");
  EXPECT_EQ(registry.find("n1")->capacity.freeGpus, 3u);
  EXPECT_EQ(registry.find("n2")->capacity.freeGpus, 2u);
  // A later config replaces what the earlier one reserved.
  reserveDomains(configOf("cluster: booster\n"), registry, diags);
  EXPECT_EQ(registry.find("n2")->capacity.freeGpus, 4u);
}

TEST(ClusterKeys, ConfigRoundTrip) {
  std::string why;
  std::string value = encodeConfig({"controller 'A' (leader-rev 7)", "cluster: booster\n# why\n"});
  EXPECT_EQ(value, "# mscale cluster config; written by controller 'A' (leader-rev 7)\ncluster: booster\n# why\n");
  std::optional<PublishedConfig> back = decodeConfig(value, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->writtenBy, "controller 'A' (leader-rev 7)");
  EXPECT_EQ(back->yaml, "cluster: booster\n# why\n");
  EXPECT_FALSE(decodeConfig("cluster: booster\n", why));
  EXPECT_EQ(why, "the value does not start with '# mscale cluster config; written by ...'");
}

} // namespace
} // namespace msc::cluster
