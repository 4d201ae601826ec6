// Kernel log lines sorted into health classes.
#include "health/KernelLog.h"

#include <gtest/gtest.h>

using namespace msc::health;

namespace {

std::string classOf(llvm::StringRef line) {
  auto c = classifyKernelLogLine(line);
  return c ? c->name : "-";
}

TEST(KernelLog, Classes) {
  EXPECT_EQ(classOf("4,1234,5678,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."),
            "nvidia-xid-fatal");
  EXPECT_EQ(classOf("NVRM: Xid (PCI:0000:3b:00): 13, pid=1234, Graphics Exception"), "nvidia-xid");
  EXPECT_EQ(classOf("EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0"), "edac-ue");
  EXPECT_EQ(classOf("EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0"), "edac-ce");
  EXPECT_EQ(classOf("nvme nvme0: I/O 123 QID 4 timeout, aborting"), "nvme-io-error");
  EXPECT_EQ(classOf("I/O error, dev nvme0n1, sector 2048 op 0x0:(READ) flags 0x0"), "nvme-io-error");
  EXPECT_EQ(classOf("mlx5_core 0000:81:00.0: poll_health:803: device's health compromised - reached miss count"),
            "mlx5-fatal");
  EXPECT_EQ(classOf("mlx5_core 0000:81:00.0: mlx5_cmd_out_err:838: QUERY_VPORT failed, syndrome (0x2d0c)"),
            "mlx5-error");
  // Lines about the same devices that are not errors.
  EXPECT_EQ(classOf("6,99,100,-;mlx5_core 0000:81:00.0: firmware version: 28.39.1002"), "-");
  EXPECT_EQ(classOf("nvme nvme0: 32/0/0 default/read/poll queues"), "-");
  EXPECT_EQ(classOf("EDAC MC: Ver: 3.0.0"), "-");
  EXPECT_EQ(classOf("usb 1-1: new high-speed USB device number 2"), "-");
}

TEST(KernelLog, RecordPrefix) {
  EXPECT_EQ(kernelLogMessage("3,17,42,-;hello; world"), "hello; world");
  EXPECT_EQ(kernelLogMessage("3,17,42,c,caller=T1;x"), "x");
  EXPECT_EQ(kernelLogMessage("plain; line"), "plain; line");
}

TEST(KernelLog, FatalXids) {
  EXPECT_TRUE(isFatalXid(48));
  EXPECT_TRUE(isFatalXid(79));
  EXPECT_FALSE(isFatalXid(13));
  EXPECT_FALSE(isFatalXid(31));
}

} // namespace
