// The YAML topology format: every XML fixture exports, reads back and writes the same bytes;
// bad files get coded diagnostics with lines, never a crash.
#include "HalTestUtil.h"

#include "hal/Render.h"
#include "hal/TopologyYaml.h"

#include <llvm/ADT/StringExtras.h>

using namespace msc;
using namespace msc::hal;
using namespace msc::hal::test;

namespace {

class YamlRoundTrip : public ::testing::TestWithParam<const char *> {};

TEST_P(YamlRoundTrip, ExportReadWriteIsByteIdentical) {
  auto l = loadFile(fixture(std::string("hwloc-xml/") + GetParam()));
  ASSERT_TRUE(l->topo) << codes(l->consumer.diags);
  std::string first = writeTopologyYaml(*l->topo);
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  auto back = readTopologyYaml(first, "export.yaml", diags);
  ASSERT_TRUE(back) << codes(consumer.diags) << first.substr(0, 2000);
  std::string second = writeTopologyYaml(*back);
  EXPECT_EQ(first, second);
  EXPECT_EQ(back->fingerprint(), l->topo->fingerprint());
  // what the passes ask survives the trip
  Summary a = summarize(*l->topo), b = summarize(*back);
  EXPECT_EQ(a.packages, b.packages);
  EXPECT_EQ(a.numaNodes, b.numaNodes);
  EXPECT_EQ(a.pus, b.pus);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.nvme, b.nvme);
  for (unsigned pu : l->topo->pus()) {
    EXPECT_EQ(l->topo->numaNodeOfPu(pu), back->numaNodeOfPu(pu)) << pu;
    EXPECT_EQ(l->topo->smtSiblings(pu), back->smtSiblings(pu)) << pu;
  }
  for (const GpuRef &g : l->topo->gpus()) {
    EXPECT_EQ(l->topo->numaNodeOfDevice(g.vertex), back->numaNodeOfDevice(back->gpus()[g.index].vertex));
    for (const GpuRef &h : l->topo->gpus())
      EXPECT_EQ(l->topo->linkClass(g.vertex, h.vertex).str(),
                back->linkClass(back->gpus()[g.index].vertex, back->gpus()[h.index].vertex).str());
  }
}

INSTANTIATE_TEST_SUITE_P(AllXml, YamlRoundTrip,
                         ::testing::Values("hwloc-16intel64-manyVFs.xml", "hwloc-192em64t-24n8c2t.xml",
                                           "hwloc-24em64t-2n6c2t-pci.xml",
                                           "hwloc-32em64t-2n8c+dax+nvme+mic+dimms.gen-hwloc2.9.xml",
                                           "hwloc-32em64t-2n8c2t-pci-wholeio.xml",
                                           "hwloc-64intel64-3g2n+2n-irregulargroups+pci.xml",
                                           "hwloc-nvidia-dgx-gb10.gen-hwloc2.9.xml", "hwloc-nvidiaDGX2.xml",
                                           "hwloc-nvidiagpunumanodes-kept.gen-hwloc2.9.xml",
                                           "hwloc-power8gpudistances.xml", "mpibind-coral-lassen-power9-4xV100.xml",
                                           "mpibind-eas-tioga-8xMI250X-gcd.xml", "mpibind-g4dnmetal-8xT4.xml",
                                           "psmgmt-dp-intelmax01-flat-xeonmax-hbm.xml",
                                           "psmgmt-jrc0323-jurecadc-gpu-4xA100.xml",
                                           "psmgmt-jrc0386-jurecadc-gpu-4xA100.v1-format.xml",
                                           "psmgmt-jwb0004-juwelsbooster-4xA100.xml"),
                         [](const auto &info) { return "f" + std::to_string(info.index); });

TEST(Yaml, SysfsFactsSurviveTheTrip) {
  std::string root = extractSysfs("hwloc-32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2", "32em64t-2n8c+1mic");
  auto l = loadSysfs(root);
  ASSERT_TRUE(l->topo);
  std::string text = writeTopologyYaml(*l->topo);
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  auto back = readTopologyYaml(text, "x.yaml", diags);
  ASSERT_TRUE(back) << codes(consumer.diags);
  EXPECT_EQ(writeTopologyYaml(*back), text);
  EXPECT_NE(back->blockDevice("nvme0n1p1"), NoVertex);
  ASSERT_NE(back->rdmaDevice("mlx4_0"), nullptr);
  EXPECT_EQ(back->rdmaDevice("mlx4_0")->ports[0].rateGbps, 56);
  EXPECT_EQ(back->freeHugepages(1, 2u << 20), 0u);
  EXPECT_EQ(back->kernelCmdline(), l->topo->kernelCmdline());
}

const char *kSmall = R"(name: node-a
kernel_cmdline: 'ro isolcpus=managed_irq,domain,2-3'
packages:
  - id: 0
    cpus: "0-7"
numa_nodes:
  - id: 0
    memory_bytes: 68719476736
    cpus: "0-7"
    hugepages:
      - page_size: 2097152
        total: 512
        free: 500
cores: [ "0,4", "1,5", "2,6", "3,7" ]
topology:
  pcie_domains:
    - domain: "0000:81"
      numa_node: 0
      switches:
        - switch: "0000:82:00.0"
          gpus: [ "0000:83:00.0" ]
          nics: [ "0000:84:00.0" ]
      nvme: [ "0000:81:02.0" ]
gpus:
  - pci: "0000:83:00.0"
    model: H100
    sm_count: 132
nics:
  - pci: "0000:84:00.0"
    rdma: mlx5_0
    ports:
      - port: 1
        state: ACTIVE
        link_layer: InfiniBand
        rate_gbps: 400
)";

TEST(Yaml, HandWrittenNodeDescription) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  auto t = readTopologyYaml(kSmall, "small.yaml", diags);
  ASSERT_TRUE(t) << codes(consumer.diags);
  EXPECT_EQ(t->pus().size(), 8u);
  EXPECT_EQ(t->smtSiblings(1), (std::vector<unsigned>{1, 5}));
  EXPECT_EQ(t->isolatedCpus(), (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(t->freeHugepages(0, 2u << 20), 500u);
  EXPECT_EQ(t->linkClass("0000:83:00.0", "mlx5_0").str(), "PIX");
  EXPECT_EQ(t->linkClass("0000:83:00.0", "0000:81:02.0").str(), "PHB");
  EXPECT_TRUE(t->shareSwitch(t->findDevice("mlx5_0"), t->findDevice("0000:83:00.0")));
  EXPECT_EQ(t->gpus()[0].info->smCount, 132u);
  EXPECT_EQ(t->numaNodeOfDevice("mlx5_0"), 0u);
  // canonical form reads back to itself
  std::string canon = writeTopologyYaml(*t);
  auto again = readTopologyYaml(canon, "canon.yaml", diags);
  ASSERT_TRUE(again);
  EXPECT_EQ(writeTopologyYaml(*again), canon);
}

TEST(Yaml, ClusterDescription) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  std::string node = writeTopologyYaml(*readTopologyYaml(kSmall, "s.yaml", diags));
  Cluster c;
  c.name = "pod";
  for (int i = 0; i < 3; ++i) {
    auto t = readTopologyYaml(node, "n.yaml", diags);
    t->setName("n" + std::to_string(i));
    c.nodes.push_back(std::move(*t));
  }
  std::string text = writeClusterYaml(c);
  auto back = readClusterYaml(text, "cluster.yaml", diags);
  ASSERT_TRUE(back) << codes(consumer.diags);
  EXPECT_EQ(back->nodes.size(), 3u);
  EXPECT_EQ(writeClusterYaml(*back), text);
  auto n1 = readTopologyYaml(text, "cluster.yaml", diags, "n1");
  ASSERT_TRUE(n1);
  EXPECT_EQ(n1->name(), "n1");
  EXPECT_FALSE(readTopologyYaml(text, "cluster.yaml", diags, "n9"));
  ASSERT_FALSE(consumer.diags.empty());
  EXPECT_EQ(consumer.diags.back().code, DiagCode::ERR_HAL_TOPO_011);
}

struct BadCase {
  const char *name;
  std::string text;
  DiagCode code;
  unsigned line;
};

std::string replace(std::string s, const std::string &from, const std::string &to) {
  size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return pos == std::string::npos ? s : s.replace(pos, from.size(), to);
}

TEST(Yaml, BadFilesGetCodedErrorsWithLines) {
  std::vector<BadCase> cases = {
      {"syntax", replace(kSmall, "numa_nodes:", "numa_nodes: ["), DiagCode::ERR_HAL_TOPO_004, 8},
      {"unknown key", replace(kSmall, "memory_bytes: 68719476736", "memroy_bytes: 1"), DiagCode::ERR_HAL_TOPO_004, 8},
      {"bad bdf", replace(kSmall, "\"0000:83:00.0\" ]", "\"0000:83:20.0\" ]"), DiagCode::ERR_HAL_TOPO_005, 21},
      {"bad domain", replace(kSmall, "\"0000:81\"", "\"0000:zz\""), DiagCode::ERR_HAL_TOPO_005, 17},
      {"duplicate", replace(kSmall, "nvme: [ \"0000:81:02.0\" ]", "nvme: [ \"0000:84:00.0\" ]"),
       DiagCode::ERR_HAL_TOPO_006, 23},
      {"cpu list", replace(kSmall, "cpus: \"0-7\"\nnuma", "cpus: \"0-x\"\nnuma"), DiagCode::ERR_HAL_TOPO_008, 5},
      {"unknown numa", replace(kSmall, "numa_node: 0", "numa_node: 3"), DiagCode::ERR_HAL_TOPO_010, 17},
      {"cpu twice", replace(kSmall, "\"1,5\"", "\"1,4\""), DiagCode::ERR_HAL_TOPO_012, 14},
      {"unplaced gpu", replace(kSmall, "  - pci: \"0000:83:00.0\"", "  - pci: \"0000:99:00.0\""),
       DiagCode::ERR_HAL_TOPO_004, 25},
      {"deep", std::string(200, '[') , DiagCode::ERR_HAL_TOPO_004, 1},
  };
  for (const BadCase &c : cases) {
    SCOPED_TRACE(c.name);
    CollectingConsumer consumer;
    DiagnosticEngine diags(nullptr, consumer);
    auto t = readTopologyYaml(c.text, "bad.yaml", diags);
    EXPECT_FALSE(t);
    ASSERT_FALSE(consumer.diags.empty());
    EXPECT_EQ(diagInfo(consumer.diags[0].code).name, diagInfo(c.code).name) << consumer.diags[0].message;
    EXPECT_EQ(consumer.diags[0].loc.file, "bad.yaml");
    EXPECT_EQ(consumer.diags[0].loc.line, c.line) << consumer.diags[0].message;
  }
}

TEST(Yaml, DuplicateNotePointsAtTheFirstListing) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  auto t = readTopologyYaml(replace(kSmall, "nvme: [ \"0000:81:02.0\" ]", "nvme: [ \"0000:84:00.0\" ]"), "d.yaml",
                            diags);
  EXPECT_FALSE(t);
  ASSERT_EQ(consumer.diags.size(), 1u);
  ASSERT_EQ(consumer.diags[0].notes.size(), 1u);
  EXPECT_EQ(consumer.diags[0].loc.line, 23u);
  EXPECT_EQ(consumer.diags[0].notes[0].loc.line, 22u);
}

TEST(Yaml, TruncationsNeverCrash) {
  std::string text = writeTopologyYaml(*loadFile(fixture("hwloc-xml/mpibind-g4dnmetal-8xT4.xml"))->topo);
  for (size_t cut = 0; cut < text.size(); cut += 97) {
    CollectingConsumer consumer;
    DiagnosticEngine diags(nullptr, consumer);
    auto t = readTopologyYaml(llvm::StringRef(text).take_front(cut), "cut.yaml", diags);
    EXPECT_TRUE(t.has_value() || !consumer.diags.empty()) << cut;
  }
}

} // namespace
