// The supervisor's pieces that need no worker: how an exit is classified, and the control page the
// executor and its worker share (heartbeats, steps, slice hand-over notices).
#include "worker/ControlPage.h"
#include "executor/Supervisor.h"
#include "worker/WorkerApi.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace msc::exec;
using msc::worker::ControlPageHost;

namespace {
int exited(int code) { return (code & 0xff) << 8; }
int signalled(int sig) { return sig & 0x7f; }
} // namespace

TEST(Supervisor, ClassifiesHowAWorkerEnded) {
  EXPECT_FALSE(classifyWorkerExit(exited(0)));
  auto io = classifyWorkerExit(exited(kWorkerExitIoError));
  ASSERT_TRUE(io);
  EXPECT_EQ(io->kind, FaultClass::NvmeIoError);
  auto full = classifyWorkerExit(exited(kWorkerExitDiskFull));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->kind, FaultClass::DiskFull);
  auto killed = classifyWorkerExit(signalled(9));
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->kind, FaultClass::WorkerCrashed);
  EXPECT_EQ(killed->detail, "SIGKILL");
  auto other = classifyWorkerExit(exited(5));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kind, FaultClass::WorkerCrashed);
  EXPECT_EQ(other->detail, "exit 5");
  EXPECT_STREQ(faultClassName(FaultClass::GpuLost), "gpu-lost");
  EXPECT_STREQ(faultClassName(FaultClass::RdmaPortDown), "rdma-port-down");
}

TEST(Supervisor, ControlPageCarriesHeartbeatsStepsAndHandOvers) {
  std::string error;
  auto host = ControlPageHost::create(error);
  ASSERT_TRUE(host) << error;
  // The worker side finds the page through the variable the executor sets (as a child would).
  ::setenv("MSCALE_CONTROL_FD", std::to_string(host->fd()).c_str(), 1);
  ASSERT_NE(mscale::worker::controlPage(), nullptr);
  EXPECT_EQ(host->beats(), 0u);
  mscale::worker::heartbeat(41);
  mscale::worker::heartbeat(42);
  EXPECT_EQ(host->beats(), 2u);
  EXPECT_EQ(host->step(), 42u);

  uint64_t generation = 0;
  std::string slices;
  EXPECT_FALSE(mscale::worker::pendingSliceUpdate(generation, slices));
  uint64_t g = host->publishSlices("trainer@0:64:0:0");
  EXPECT_FALSE(host->acknowledged(g));
  ASSERT_TRUE(mscale::worker::pendingSliceUpdate(generation, slices));
  EXPECT_EQ(generation, g);
  EXPECT_EQ(slices, "trainer@0:64:0:0");
  mscale::worker::acknowledgeSlices(generation);
  EXPECT_TRUE(host->acknowledged(g));
  EXPECT_FALSE(mscale::worker::pendingSliceUpdate(generation, slices));

  mscale::worker::reportThroughput(123.456);
  EXPECT_DOUBLE_EQ(host->reportedTflops(), 123.456);

  mscale::worker::finishing();
  EXPECT_TRUE(host->finishing());

  // A new worker starts from its environment: no stale notice, no stale beats or throughput, and
  // not finishing (the previous worker's word would give it the exit grace against hangs).
  host->publishSlices("trainer@0:32:0:0");
  host->resetForNewWorker();
  EXPECT_EQ(host->beats(), 0u);
  EXPECT_EQ(host->reportedTflops(), 0.0);
  EXPECT_FALSE(host->finishing());
  EXPECT_FALSE(mscale::worker::pendingSliceUpdate(generation, slices));
  ::unsetenv("MSCALE_CONTROL_FD");
}
