// nvidia-smi topo -m captures: tab- and space-separated, with and without legends, compacted.
#include "HalTestUtil.h"

#include "hal/LinkMatrix.h"

#include <llvm/Support/MemoryBuffer.h>

using namespace msc;
using namespace msc::hal;
using namespace msc::hal::test;

namespace {

struct Parsed {
  CollectingConsumer consumer;
  DiagnosticEngine diags{nullptr, consumer};
  std::optional<LinkMatrix> m;
};

std::unique_ptr<Parsed> parse(const std::string &name) {
  auto p = std::make_unique<Parsed>();
  auto buf = llvm::MemoryBuffer::getFile(fixture("nvidia-smi/" + name));
  EXPECT_TRUE(bool(buf)) << name;
  if (buf)
    p->m = parseNvidiaSmiTopo((*buf)->getBuffer(), name, p->diags);
  return p;
}

struct Shape {
  const char *file;
  size_t gpus, nics;
  const char *gpuGpu; // GPU0/GPU1
};
class NvidiaSmiShape : public ::testing::TestWithParam<Shape> {};

TEST_P(NvidiaSmiShape, ParsesAllRowsSymmetrically) {
  auto p = parse(GetParam().file);
  ASSERT_TRUE(p->m) << codes(p->consumer.diags);
  EXPECT_TRUE(p->consumer.diags.empty()) << codes(p->consumer.diags);
  const LinkMatrix &m = *p->m;
  EXPECT_EQ(m.size(), GetParam().gpus + GetParam().nics);
  EXPECT_EQ(m.at(0, 1).str(), GetParam().gpuGpu);
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m.at(i, i).kind, LinkClass::Self);
    if (i < GetParam().gpus) {
      EXPECT_FALSE(m.cpuAffinity[i].empty()) << i;
      EXPECT_FALSE(m.numaAffinity[i].empty()) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Captures, NvidiaSmiShape,
    ::testing::Values(Shape{"a100-8gpu-2numa-noNIC.stas00-compacted.topo-m.txt", 8, 0, "NV12"},
                      Shape{"a100-sxm4-8gpu-epyc7742-10nic.topo-m.txt", 8, 10, "NV12"},
                      Shape{"h100-8gpu-2numa-noNIC.stas00.topo-m.txt", 8, 0, "NV18"},
                      Shape{"h100-class-8gpu-12nic-cgroup-affinity.mooncake-issue2039.topo-m.txt", 8, 12, "NV18"},
                      Shape{"h100-hgx-8gpu-8nic.sglang-issue30401.topo-m.txt", 8, 8, "NV18"},
                      Shape{"h20-vm-8gpu-8nic-nolegend.nccl-tests-issue321.topo-m.txt", 8, 8, "NV18"}),
    [](const auto &info) { return "m" + std::to_string(info.index); });

TEST(NvidiaSmi, DgxA100PairsAndAffinity) {
  auto p = parse("a100-sxm4-8gpu-epyc7742-10nic.topo-m.txt");
  ASSERT_TRUE(p->m);
  const LinkMatrix &m = *p->m;
  auto gpu0 = *m.indexOf("GPU0"), nic0 = *m.indexOf("NIC0"), nic8 = *m.indexOf("NIC8"), nic9 = *m.indexOf("NIC9");
  EXPECT_EQ(m.at(gpu0, nic0).str(), "PXB");
  EXPECT_EQ(m.at(nic8, nic9).str(), "PIX");
  EXPECT_EQ(m.cpuAffinity[gpu0], "48-63,176-191");
  EXPECT_EQ(m.numaAffinity[gpu0], "3");
  EXPECT_EQ(m.names[nic0], "mlx5_0"); // from the NIC Legend
  EXPECT_EQ(*m.indexOf("mlx5_9"), nic9);
}

TEST(NvidiaSmi, VmWithoutLegendReversedPairing) {
  auto p = parse("h20-vm-8gpu-8nic-nolegend.nccl-tests-issue321.topo-m.txt");
  ASSERT_TRUE(p->m);
  const LinkMatrix &m = *p->m;
  for (unsigned g = 0; g < 8; ++g)
    EXPECT_EQ(m.at(*m.indexOf("GPU" + std::to_string(g)), *m.indexOf("NIC" + std::to_string(7 - g))).str(), "PIX");
  EXPECT_TRUE(m.names[*m.indexOf("NIC0")].empty());
  EXPECT_EQ(m.cpuAffinity[*m.indexOf("GPU4")], "64-127");
}

TEST(NvidiaSmi, CgroupRestrictedAffinity) {
  auto p = parse("h100-class-8gpu-12nic-cgroup-affinity.mooncake-issue2039.topo-m.txt");
  ASSERT_TRUE(p->m);
  const LinkMatrix &m = *p->m;
  for (const char *nic : {"NIC0", "NIC1", "NIC2"})
    EXPECT_EQ(m.at(*m.indexOf("GPU0"), *m.indexOf(nic)).str(), "PIX");
}

TEST(NvidiaSmi, BrokenMatricesAreCodedErrors) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  EXPECT_FALSE(parseNvidiaSmiTopo("hello\n", "x.txt", diags));
  EXPECT_FALSE(parseNvidiaSmiTopo("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\n", "y.txt", diags));
  EXPECT_FALSE(parseNvidiaSmiTopo("\tGPU0\tGPU1\nGPU0\t X \tBAD\nGPU1\tNV4\tX\n", "z.txt", diags));
  ASSERT_EQ(consumer.diags.size(), 3u);
  for (const Diagnostic &d : consumer.diags)
    EXPECT_EQ(d.code, DiagCode::ERR_HAL_TOPO_009);
  EXPECT_EQ(consumer.diags[1].loc.line, 3u);
  auto asym = parseNvidiaSmiTopo("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tSYS\tX\n", "a.txt", diags);
  ASSERT_TRUE(asym);
  EXPECT_EQ(consumer.diags.back().code, DiagCode::WRN_HAL_TOPO_002);
}

} // namespace
