// The queries the validation passes ask, on recorded machines whose answers the files state.
#include "HalTestUtil.h"

#include "hal/LinkMatrix.h"
#include "hal/Render.h"
#include "support/CpuList.h"

#include <set>

using namespace msc;
using namespace msc::hal;
using namespace msc::hal::test;

namespace {

TEST(Cpus, SmtSiblingsCoresAndNumaOfTheHpNode) {
  // HP SL390s: PU P#0 and P#12 share core 0; even PUs on package 0 (NUMA 0), odd on NUMA 1.
  auto l = loadFile(fixture("hwloc-xml/hwloc-24em64t-2n6c2t-pci.xml"));
  ASSERT_TRUE(l->topo);
  const Topology &t = *l->topo;
  EXPECT_EQ(t.smtSiblings(0), (std::vector<unsigned>{0, 12}));
  EXPECT_EQ(t.smtSiblings(12), (std::vector<unsigned>{0, 12}));
  EXPECT_EQ(t.physicalCoreOf(0), t.physicalCoreOf(12));
  EXPECT_NE(t.physicalCoreOf(0), t.physicalCoreOf(2));
  EXPECT_EQ(t.numaNodeOfPu(0), 0u);
  EXPECT_EQ(t.numaNodeOfPu(1), 1u);
  EXPECT_EQ(formatCpuList(t.cpusOfNumaNode(0)), "0,2,4,6,8,10,12,14,16,18,20,22");
  EXPECT_TRUE(t.hasPu(23));
  EXPECT_TRUE(t.isPuOnline(23));
  EXPECT_FALSE(t.hasPu(24));
  EXPECT_TRUE(t.smtSiblings(24).empty());
  EXPECT_EQ(t.numaDistance(0, 1), 20u);
  EXPECT_EQ(t.numaDistance(1, 1), 10u);
  EXPECT_FALSE(t.numaNodeOfPu(99).has_value());
  // hugepage pools from the XML: a 2 MiB pool of 0 pages, its free count not given, which every
  // tool reads the same way (HugepagePool::freeText).
  ASSERT_EQ(t.numaInfo(0)->hugepages.size(), 1u);
  EXPECT_EQ(t.numaInfo(0)->hugepages[0].pageSize, 2u << 20);
  EXPECT_FALSE(t.freeHugepages(0, 2u << 20).has_value());
  EXPECT_EQ(t.numaInfo(0)->hugepages[0].freeText(), "?/0 free (the topology does not say how many)");
  EXPECT_EQ((HugepagePool{2u << 20, 16, 3}).freeText(), "3/16 free");
  EXPECT_EQ(t.label(t.numaVertex(1)), "NUMANode P#1");
}

TEST(Cpus, LargestFixture) {
  auto l = loadFile(fixture("hwloc-xml/hwloc-192em64t-24n8c2t.xml"));
  ASSERT_TRUE(l->topo);
  const Topology &t = *l->topo;
  EXPECT_EQ(t.numaNodes().size(), 24u);
  size_t total = 0;
  for (unsigned n : t.numaNodes()) {
    total += t.cpusOfNumaNode(n).size();
    for (unsigned pu : t.cpusOfNumaNode(n))
      EXPECT_EQ(t.numaNodeOfPu(pu), n);
  }
  EXPECT_EQ(total, 384u);
  for (unsigned pu : t.pus())
    EXPECT_EQ(t.smtSiblings(pu).size(), 2u);
  EXPECT_EQ(t.numaDistance(0, 0), 10u);
}

// Every core once by its first PU, on every recorded machine: what firstPuOfCore says PU by PU.
TEST(Cpus, FirstPusOfCoresAreEachCoresFirstPuOnce) {
  for (const char *f : {"hwloc-xml/hwloc-24em64t-2n6c2t-pci.xml", "hwloc-xml/hwloc-192em64t-24n8c2t.xml",
                        "hwloc-xml/mpibind-coral-lassen-power9-4xV100.xml",
                        "hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"}) {
    auto l = loadFile(fixture(f));
    ASSERT_TRUE(l->topo) << f;
    std::set<unsigned> expected;
    for (unsigned pu : l->topo->pus())
      expected.insert(l->topo->firstPuOfCore(pu));
    EXPECT_EQ(l->topo->firstPusOfCores(), std::vector<unsigned>(expected.begin(), expected.end())) << f;
  }
  auto hp = loadFile(fixture("hwloc-xml/hwloc-24em64t-2n6c2t-pci.xml"));
  ASSERT_TRUE(hp->topo);
  EXPECT_EQ(hp->topo->firstPusOfCores().size(), 12u); // 24 PUs, SMT2
  EXPECT_EQ(hp->topo->firstPusOfCores().front(), 0u);
}

TEST(Devices, LookupByNameAndAddress) {
  auto l = loadFile(fixture("hwloc-xml/mpibind-g4dnmetal-8xT4.xml"));
  ASSERT_TRUE(l->topo);
  const Topology &t = *l->topo;
  ASSERT_EQ(t.gpus().size(), 8u);
  for (const GpuRef &g : t.gpus()) {
    EXPECT_EQ(t.findDevice(g.info->pci.str()), t.pciFunctionOf(g.vertex));
    EXPECT_EQ(t.gpuByPci(g.info->pci)->vertex, g.vertex);
    EXPECT_EQ(t.findDevice("cuda" + std::to_string(g.index)), g.vertex) << g.index;
    if (g.index) {
      EXPECT_LT(t.gpus()[g.index - 1].info->pci, g.info->pci);
    }
  }
  // 4 GPUs per NUMA node, two per host bridge
  unsigned onNode0 = 0;
  for (const GpuRef &g : t.gpus())
    onNode0 += t.numaNodeOfDevice(g.vertex) == 0u;
  EXPECT_EQ(onNode0, 4u);
  EXPECT_EQ(t.linkClass("cuda0", "cuda1").str(), "PHB");
  EXPECT_EQ(t.linkClass("cuda0", "cuda2").str(), "NODE");
  EXPECT_EQ(t.linkClass("cuda0", "cuda7").str(), "SYS");
  EXPECT_NE(t.rdmaDevice("rdmap197s0"), nullptr);
  EXPECT_EQ(t.numaNodeOfDevice("rdmap197s0"), 1u);
  for (const char *ns : {"nvme0n1", "nvme1n1", "nvme2n1"})
    EXPECT_NE(t.blockDevice(ns), NoVertex) << ns;
  EXPECT_EQ(t.findDevice("nosuchdevice"), NoVertex);
  EXPECT_EQ(t.linkClass("nosuchdevice", "cuda0").kind, LinkClass::Unknown);
  EXPECT_FALSE(t.gpuByIndex(8).has_value());
}

TEST(Devices, MatrixOfTheJurecaNodePairsGpusWithHcas) {
  auto l = loadFile(fixture("hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml"));
  ASSERT_TRUE(l->topo);
  LinkMatrix m = computeLinkMatrix(*l->topo);
  ASSERT_EQ(m.size(), 8u); // 4 GPUs + 4 HCAs
  // GPU0 = 03:00.0 pairs with mlx5_0, GPU1 = 44:00.0 with mlx5_1, GPU2 = 84:00.0 with mlx5_2, GPU3 = c4:00.0 with mlx5_3
  for (unsigned g = 0; g < 4; ++g)
    for (unsigned n = 0; n < 4; ++n)
      EXPECT_EQ(m.at(g, 4 + n).str(), g == n ? "PIX" : "SYS") << g << " " << n;
  EXPECT_EQ(m.names[4], "mlx5_0");
  EXPECT_EQ(m.numaAffinity[0], "3");
}

TEST(Kernel, IsolcpusWithFlagsAndNohzFull) {
  KernelCpuSets s = parseKernelCmdline("BOOT_IMAGE=/vmlinuz ro isolcpus=managed_irq,domain,2-5,9 nohz_full=2-5,8 quiet");
  EXPECT_EQ(s.isolated, (std::vector<unsigned>{2, 3, 4, 5, 9}));
  EXPECT_EQ(s.nohzFull, (std::vector<unsigned>{2, 3, 4, 5, 8}));
  EXPECT_TRUE(parseKernelCmdline("ro quiet").isolated.empty());
  EXPECT_EQ(parseKernelCmdline("isolcpus=7").isolated, (std::vector<unsigned>{7}));
  Topology t;
  t.setKernelCmdline("isolcpus=nohz,1-3");
  EXPECT_EQ(t.isolatedCpus(), (std::vector<unsigned>{1, 2, 3}));
  EXPECT_EQ(t.kernelCmdline(), "isolcpus=nohz,1-3");
}

TEST(CpuList, ParseAndFormat) {
  EXPECT_EQ(formatCpuList(*parseCpuList("0-3,8,10-11")), "0-3,8,10-11");
  EXPECT_EQ(formatCpuList(*parseCpuList("5,1,2,3")), "1-3,5");
  EXPECT_TRUE(parseCpuList("")->empty());
  EXPECT_FALSE(parseCpuList("3-1"));
  EXPECT_FALSE(parseCpuList("a"));
  EXPECT_FALSE(parseCpuList("1-"));
  EXPECT_FALSE(parseCpuList("1,,2"));
  EXPECT_FALSE(parseCpuList("+1"));
  EXPECT_EQ(formatCpuList(*parseCpuList(" 4 , 0-1\n")), "0-1,4"); // as sysfs files end
  EXPECT_EQ(parseCpuList("4294967294-4294967295")->size(), 2u);  // the top of the range ends the loop
}

TEST(LinkClassText, RoundTrips) {
  for (const char *s : {"X", "PIX", "PXB", "PHB", "NODE", "SYS", "NV12", "NV18"})
    EXPECT_EQ(LinkClass::parse(s)->str(), s);
  EXPECT_FALSE(LinkClass::parse("NV"));
  EXPECT_FALSE(LinkClass::parse("FOO"));
}

TEST(Fingerprint, StableAndSensitive) {
  auto a = loadFile(fixture("hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml"));
  auto b = loadFile(fixture("hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml"));
  auto c = loadFile(fixture("hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"));
  ASSERT_TRUE(a->topo && b->topo && c->topo);
  EXPECT_EQ(a->topo->fingerprint(), b->topo->fingerprint());
  EXPECT_NE(a->topo->fingerprint(), c->topo->fingerprint());
  Topology copy = *a->topo; // a value: copies compare equal, then diverge
  EXPECT_EQ(copy.fingerprint(), a->topo->fingerprint());
  copy.setKernelCmdline("isolcpus=1");
  EXPECT_NE(copy.fingerprint(), a->topo->fingerprint());
  EXPECT_GT(a->topo->memoryFootprint(), 0u);
}

TEST(CopyOnWrite, ACopySharesTheGraphUntilOneSideChanges) {
  auto l = loadFile(fixture("hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml"));
  ASSERT_TRUE(l->topo);
  const Topology &original = *l->topo;
  Topology copy = original;
  EXPECT_EQ(&copy.graph(), &original.graph());

  // A change through the mutable vertex() or a setter copies the shape; the original stays as it was.
  unsigned node = copy.numaNodes().front();
  uint64_t bytes = original.numaInfo(node)->memoryBytes;
  copy.mutableVertex(copy.numaVertex(node)).as<NumaInfo>()->memoryBytes = bytes + 4096;
  EXPECT_NE(&copy.graph(), &original.graph());
  EXPECT_EQ(copy.numaInfo(node)->memoryBytes, bytes + 4096);
  EXPECT_EQ(original.numaInfo(node)->memoryBytes, bytes);
  EXPECT_NE(copy.fingerprint(), original.fingerprint());

  // Renaming a copy changes only the name: nodes of one shape share their graph.
  Topology renamed = original;
  renamed.setName("other");
  EXPECT_EQ(&renamed.graph(), &original.graph());
  EXPECT_NE(renamed.fingerprint(), original.fingerprint());

  // A moved-from Topology is empty and usable, like a new one.
  Topology moved = std::move(renamed);
  EXPECT_EQ(moved.name(), "other");
  EXPECT_EQ(renamed.vertexCount(), 0u);
  EXPECT_EQ(renamed.root(), NoVertex);
  renamed.addVertex(Vertex{});
  EXPECT_EQ(renamed.vertexCount(), 1u);
  EXPECT_EQ(Topology().vertexCount(), 0u); // the shared empty shape was copied, not changed
  EXPECT_EQ(moved.vertexCount(), original.vertexCount());
}

TEST(Render, TreeMarksTrainingDevicesAndHealthSaysWhatIsAbsent) {
  auto l = loadFile(fixture("hwloc-xml/hwloc-nvidia-dgx-gb10.gen-hwloc2.9.xml"));
  ASSERT_TRUE(l->topo);
  std::string tree, health;
  llvm::raw_string_ostream ts(tree), hs(health);
  printTree(*l->topo, ts);
  printHealth(*l->topo, hs);
  EXPECT_NE(tree.find("1 package(s), 1 NUMA node(s), 20 core(s), 20 PU(s), 0 GPU(s)"), std::string::npos) << tree;
  EXPECT_NE(health.find("absent: no GPU found"), std::string::npos) << health;
  EXPECT_NE(health.find("absent: no RDMA device found"), std::string::npos);
  EXPECT_NE(health.find("absent: no NVMe controller found"), std::string::npos);
}

} // namespace
