// Where a lost GPU's slices go, and how they are bound there: on the recorded JURECA-DC node with
// two of its A100s made an H100 (compute capability 9.0, 132 SMs) and a MIG-enabled A100, so that a
// move crosses architectures and mechanisms. No GPU, no process: the re-check and hand-over are
// modelled by the attempt function.
#include "executor/supervise/DeviceFailover.h"

#include "admission/SliceBinding.h"
#include "hal/Loader.h"
#include "support/PciAddress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <sstream>

using namespace msc;
using namespace msc::exec;

namespace {

// The recorded node's text with its second GPU (0000:44:00.0, NUMA 1) an H100 and its third
// (0000:84:00.0, NUMA 7) an A100 in MIG mode.
const hal::Topology &mixedNode() {
  static const hal::Topology topo = [] {
    std::ifstream in(MSC_SOURCE_DIR "/test/lit/passes/Inputs/jrc0323-a100.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    auto replaceIn = [&](const std::string &gpu, const std::string &from, const std::string &to) {
      size_t at = yaml.find("- pci:             \"" + gpu + "\"");
      EXPECT_NE(at, std::string::npos) << gpu;
      size_t field = yaml.find(from, at);
      EXPECT_NE(field, std::string::npos) << from;
      yaml.replace(field, from.size(), to);
    };
    replaceIn("0000:44:00.0", "model:           A100-SXM4-40GB", "model:           H100-SXM5-80GB");
    replaceIn("0000:44:00.0", "compute_capability: '8.0'", "compute_capability: '9.0'");
    replaceIn("0000:44:00.0", "sm_count:        108", "sm_count:        132");
    replaceIn("0000:84:00.0", "sm_count:        108", "sm_count:        108\n    mig:             enabled");
    // One file per process: ctest runs each test of this file in a process of its own, at once.
    std::string path = ::testing::TempDir() + "/mixed-gpus." + std::to_string(::getpid()) + ".yaml";
    std::ofstream(path) << yaml;
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    std::optional<hal::Topology> t = hal::loadTopology(hal::TopologySource::file(path), diags);
    std::remove(path.c_str());
    EXPECT_TRUE(t) << (sink.diags.empty() ? "" : sink.diags.front().message);
    return t ? *t : hal::Topology{};
  }();
  return topo;
}

// A plan with role 'trainer' on one of four slices (green contexts) of the A100 at index 0, NUMA 3,
// as lowering binds it on this node.
plan::Plan planOnGpu0() {
  plan::Plan p;
  plan::GpuSlice *s = p.add_gpu_slices();
  s->set_role("trainer");
  s->set_slices(1);
  s->set_slices_per_gpu(4);
  s->set_uuid("GPU-lost-device");
  std::optional<hal::GpuRef> gpu0 = mixedNode().gpuByPci(*parsePciAddress("0000:03:00.0"));
  EXPECT_TRUE(gpu0);
  if (gpu0)
    admission::bindSliceToGpu(*s, mixedNode(), *gpu0);
  return p;
}

std::vector<unsigned> indices(const std::vector<hal::GpuRef> &gpus) {
  std::vector<unsigned> out;
  for (const hal::GpuRef &g : gpus)
    out.push_back(g.index);
  return out;
}

} // namespace

TEST(DeviceFailover, CandidatesOnTheLostGpusNumaNodeComeFirstThenByIndex) {
  const hal::Topology &node = mixedNode();
  ASSERT_EQ(node.gpus().size(), 4u);
  EXPECT_EQ(indices(failoverCandidates(node, 0, 3)), (std::vector<unsigned>{1, 2, 3})); // NUMA 3 has no other GPU
  EXPECT_EQ(indices(failoverCandidates(node, 0, 7)), (std::vector<unsigned>{2, 1, 3})); // GPU 2 is on NUMA 7
  EXPECT_EQ(indices(failoverCandidates(node, 3, -1)), (std::vector<unsigned>{0, 1, 2}));
}

TEST(DeviceFailover, ASliceMovedOntoAnotherArchitectureGetsItsSmsAndMechanism) {
  plan::Plan current = planOnGpu0();
  const plan::GpuSlice &before = current.gpu_slices(0);
  EXPECT_EQ(before.model(), "A100-SXM4-40GB");
  EXPECT_EQ(before.sm_count(), 26u); // 108 / 4 = 27, aligned down to Ampere's 2
  EXPECT_EQ(before.mechanism(), plan::GpuSlice::GREEN_CONTEXT);

  std::vector<unsigned> offered;
  GpuFailover moved = moveOffLostGpu(current, 0, mixedNode(), [&](const hal::GpuRef &to, const plan::Plan &) {
    offered.push_back(to.index);
    return std::optional<std::string>();
  });
  ASSERT_TRUE(moved.moved) << moved.why;
  EXPECT_EQ(moved.to, 1u);
  EXPECT_EQ(moved.role, "trainer");
  plan::Plan next = planMovedTo(current, 0, mixedNode(), mixedNode().gpus()[1]);
  const plan::GpuSlice &after = next.gpu_slices(0);
  EXPECT_EQ(after.gpu_index(), 1u);
  EXPECT_EQ(after.pci_address(), "0000:44:00.0");
  EXPECT_EQ(after.model(), "H100-SXM5-80GB");
  EXPECT_EQ(after.gpu_sm_count(), 132u);
  EXPECT_EQ(after.sm_count(), 32u) << "132 / 4 = 33, aligned down to Hopper's 8: not the A100's 26";
  EXPECT_EQ(after.mechanism(), plan::GpuSlice::GREEN_CONTEXT);
  EXPECT_EQ(after.numa_node(), 1);
  EXPECT_TRUE(after.uuid().empty()) << "the UUID named the lost device";
  EXPECT_EQ(after.slices(), 1u);
  EXPECT_EQ(after.slices_per_gpu(), 4u);
  EXPECT_EQ(offered, (std::vector<unsigned>{1}));
}

TEST(DeviceFailover, ASliceMovedOntoAMigGpuIsAMigSlice) {
  plan::Plan next = planMovedTo(planOnGpu0(), 0, mixedNode(), mixedNode().gpus()[2]);
  EXPECT_EQ(next.gpu_slices(0).mechanism(), plan::GpuSlice::MIG);
  EXPECT_EQ(next.gpu_slices(0).numa_node(), 7);
}

TEST(DeviceFailover, RefusedCandidatesAreTriedInTurnAndEachRefusalIsKept) {
  GpuFailover moved = moveOffLostGpu(planOnGpu0(), 0, mixedNode(), [](const hal::GpuRef &to, const plan::Plan &) {
    return to.index == 3 ? std::optional<std::string>()
                         : std::optional<std::string>("held by tenant " + std::to_string(to.index));
  });
  ASSERT_TRUE(moved.moved);
  EXPECT_EQ(moved.to, 3u);

  GpuFailover none = moveOffLostGpu(planOnGpu0(), 0, mixedNode(), [](const hal::GpuRef &to, const plan::Plan &) {
    return std::optional<std::string>("busy");
  });
  EXPECT_FALSE(none.moved);
  EXPECT_EQ(none.why, "gpu 1: busy; gpu 2: busy; gpu 3: busy");
}

TEST(DeviceFailover, ANodeWithoutAnotherGpuSaysSo) {
  // A node read anew after the loss that has no GPU left to offer.
  GpuFailover moved = moveOffLostGpu(planOnGpu0(), 0, hal::Topology{}, [](const hal::GpuRef &, const plan::Plan &) {
    ADD_FAILURE() << "no candidate to offer";
    return std::optional<std::string>();
  });
  EXPECT_FALSE(moved.moved);
  EXPECT_EQ(moved.why, "the node has no other GPU");
  EXPECT_EQ(moved.role, "trainer");
}

TEST(DeviceFailover, TheRoleOnAGpuIsTheOneARefusalNames) {
  plan::Plan p = planOnGpu0();
  EXPECT_EQ(roleOnGpu(p, 0), "trainer");
  EXPECT_EQ(roleOnGpu(p, 5), "") << "no slice on that GPU";
}
