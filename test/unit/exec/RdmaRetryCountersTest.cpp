// RDMA retries from a recorded sysfs tree (this machine has no RDMA device) and their rate.
#include "executor/rdma/RdmaRetryCounters.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

using namespace msc::exec;

namespace {

struct SysfsTree {
  llvm::SmallString<128> root;
  SysfsTree() { EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("rdma-sysfs", root)); }
  ~SysfsTree() { llvm::sys::fs::remove_directories(root); }
  void write(const std::string &rel, const std::string &text) {
    std::string path = std::string(root) + "/" + rel;
    llvm::sys::fs::create_directories(llvm::StringRef(path).rsplit('/').first);
    std::error_code ec;
    llvm::raw_fd_ostream(path, ec) << text;
    ASSERT_FALSE(ec);
  }
};

TEST(RdmaRetries, SumsTheAckTimeoutAndRnrRetryCounters) {
  SysfsTree t;
  t.write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "12\n");
  t.write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/rnr_nak_retry_err", "30\n");
  RdmaRetryReading r = readRdmaRetries(t.root, "mlx5_0", 1);
  EXPECT_TRUE(r.available) << r.unavailableReason;
  EXPECT_EQ(r.total, 42u);
}

TEST(RdmaRetries, UnavailableWithTheReasonNeverZero) {
  SysfsTree t;
  RdmaRetryReading none = readRdmaRetries(t.root, "mlx5_0", 1);
  EXPECT_FALSE(none.available);
  EXPECT_NE(none.unavailableReason.find("no RDMA device 'mlx5_0' on this node"), std::string::npos);
  // A device without mlx5 hardware counters (port counters only).
  t.write("sys/class/infiniband/rxe0/ports/1/counters/port_rcv_errors", "0\n");
  RdmaRetryReading noCounters = readRdmaRetries(t.root, "rxe0", 1);
  EXPECT_FALSE(noCounters.available);
  EXPECT_NE(noCounters.unavailableReason.find("has no readable"), std::string::npos);
  EXPECT_NE(noCounters.unavailableReason.find("local_ack_timeout_err"), std::string::npos);
}

TEST(RdmaRetries, RatePerMinuteOverTheLastMinute) {
  using namespace std::chrono_literals;
  RdmaRetryRate rate;
  auto t0 = RdmaRetryRate::Clock::time_point{} + 1h;
  EXPECT_EQ(rate.perMinute(), -1);
  rate.add(t0, 100);
  EXPECT_EQ(rate.perMinute(), -1);
  rate.add(t0 + 500ms, 101);
  EXPECT_EQ(rate.perMinute(), -1); // under a second apart: no rate yet
  rate.add(t0 + 30s, 130);
  EXPECT_DOUBLE_EQ(rate.perMinute(), 60.0);
  // Two minutes later the window starts at the last reading older than a minute.
  rate.add(t0 + 150s, 250);
  rate.add(t0 + 180s, 280);
  EXPECT_DOUBLE_EQ(rate.perMinute(), 60.0);
  // A counter that went back (device reset) starts over.
  rate.add(t0 + 190s, 5);
  EXPECT_EQ(rate.perMinute(), -1);
}

} // namespace
