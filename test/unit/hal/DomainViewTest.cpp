// The PCIe-domain view of a node (hal/DomainView.h) on recorded machines: each host bridge with its
// NUMA node and the GPUs, HCAs, NICs and NVMe under it, linked to the domain's GPUs; remarks shown.
#include "HalTestUtil.h"

#include "hal/DomainView.h"

using namespace msc;
using namespace msc::hal;
using namespace msc::hal::test;

namespace {

std::string view(const Topology &t, const DomainViewOptions &options = {}) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printDomains(t, "n1", os, options);
  return out;
}

TEST(DomainView, JuwelsBoosterOneGpuAndHcaPerDomain) {
  auto l = loadFile(fixture("hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"));
  ASSERT_TRUE(l->topo);
  const Topology &t = *l->topo;
  EXPECT_EQ(pcieDomains(t), (std::vector<PciBus>{{0, 0x00}, {0, 0x40}, {0, 0x60}, {0, 0x80}, {0, 0xc0}, {0, 0xe0}}));
  EXPECT_EQ(pcieDomainOf(t, t.findDevice("mlx5_2")), (PciBus{0, 0x80}));
  EXPECT_EQ(pcieDomainOf(t, t.findDevice("0000:c4:00.0")), (PciBus{0, 0xc0}));
  EXPECT_FALSE(pcieDomainOf(t, NoVertex));
  DomainViewOptions options;
  options.remarks[{0, 0x00}] = "reserved by cluster config 'booster'";
  EXPECT_EQ(view(t, options), "node n1: 6 PCIe domain(s), 4 GPU(s), 4 RDMA device(s), 0 NVMe controller(s)\n"
                              "  domain 0000:00  NUMA 3  reserved by cluster config 'booster'\n"
                              "    GPU 0   0000:03:00.0  NVIDIA A100-SXM4-40GB, 108 SMs, 40.0 GiB\n"
                              "    mlx5_0  0000:04:00.0  RDMA port 1 ACTIVE; netdev ib0; PIX to GPU 0\n"
                              "    and 1 other PCI function(s)\n"
                              "  domain 0000:40  NUMA 1\n"
                              "    GPU 1   0000:44:00.0  NVIDIA A100-SXM4-40GB, 108 SMs, 40.0 GiB\n"
                              "    mlx5_1  0000:43:00.0  RDMA port 1 ACTIVE; netdev ib1; PIX to GPU 1\n"
                              "    and 1 other PCI function(s)\n"
                              "  domain 0000:60  NUMA 0\n"
                              "    no GPU, NIC or NVMe; 1 other PCI function(s)\n"
                              "  domain 0000:80  NUMA 7\n"
                              "    GPU 2   0000:84:00.0  NVIDIA A100-SXM4-40GB, 108 SMs, 40.0 GiB\n"
                              "    mlx5_2  0000:83:00.0  RDMA port 1 ACTIVE; netdev ib2; PIX to GPU 2\n"
                              "    and 1 other PCI function(s)\n"
                              "  domain 0000:c0  NUMA 5\n"
                              "    GPU 3   0000:c4:00.0  NVIDIA A100-SXM4-40GB, 108 SMs, 40.0 GiB\n"
                              "    mlx5_3  0000:c3:00.0  RDMA port 1 ACTIVE; netdev ib3; PIX to GPU 3\n"
                              "    and 2 other PCI function(s)\n"
                              "  domain 0000:e0  NUMA 4\n"
                              "    NIC  0000:e1:00.0  netdev enp225s0f0\n"
                              "    NIC  0000:e1:00.1  netdev enp225s0f1\n");
}

TEST(DomainView, NvmeAndNvLinkPeers) {
  auto nvme = loadFile(fixture("hwloc-xml/hwloc-32em64t-2n8c+dax+nvme+mic+dimms.gen-hwloc2.9.xml"));
  ASSERT_TRUE(nvme->topo);
  std::string out = view(*nvme->topo);
  EXPECT_NE(out.find("    nvme0  0000:00:02.0  NVMe; nvme0n1 (372.6 GiB)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("    mlx4_0  0000:82:00.0  RDMA port 1 ACTIVE; netdev ib0\n"), std::string::npos) << out;
  // Sixteen GPUs behind NVSwitches: every peer is NV6, said once per GPU.
  auto dgx = loadFile(fixture("hwloc-xml/hwloc-nvidiaDGX2.xml"));
  ASSERT_TRUE(dgx->topo);
  out = view(*dgx->topo);
  EXPECT_NE(out.find("    GPU 1  0000:36:00.0  NVIDIA Tesla V100-SXM3-32GB-H, 80 SMs, 32.0 GiB; NV6 to GPUs 0,2-15\n"),
            std::string::npos)
      << out;
}

} // namespace
