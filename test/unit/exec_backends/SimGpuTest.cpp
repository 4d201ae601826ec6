// The sim GPU backend: slicing with granularity, faults, and the deterministic workload model.
#include "TestUtil.h"

#include "executor/gpu/GpuBackends.h"
#include "executor/gpu/SimGpuBackend.h"
#include "hal/Topology.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace msc;
using namespace msc::exec;
using msc::exec::test::gpuSlice;

namespace {

std::vector<SimGpuConfig> twoH100() {
  std::vector<SimGpuConfig> gpus;
  std::string error;
  EXPECT_TRUE(parseSimGpuSpec("2x132sm:80g", gpus, error)) << error;
  return gpus;
}

TEST(SimGpu, NameIsSimAlways) {
  SimGpuBackend sim(twoH100());
  EXPECT_EQ(sim.name(), "sim");
  std::string error;
  auto id = sim.createSlice(gpuSlice(0, 64), error);
  ASSERT_TRUE(id) << error;
  auto env = sim.workerEnvironment(*id);
  ASSERT_FALSE(env.empty());
  EXPECT_EQ(env[0], std::make_pair(std::string("MSCALE_GPU_BACKEND"), std::string("sim")));
}

TEST(SimGpu, SlicesHonourTheGranule) {
  SimGpuBackend sim(twoH100());
  EXPECT_EQ(sim.granule(0), 8u);
  std::string error;
  auto a = sim.createSlice(gpuSlice(0, 66), error); // rounded down to 64
  auto b = sim.createSlice(gpuSlice(0, 66), error);
  ASSERT_TRUE(a && b) << error;
  EXPECT_EQ(*sim.sliceSms(*a), 64u);
  EXPECT_EQ(*sim.sliceSms(*b), 64u);
  EXPECT_EQ(sim.freeSms(0), 4u);
  EXPECT_FALSE(sim.createSlice(gpuSlice(0, 8), error));
  EXPECT_NE(error.find("4 free SMs"), std::string::npos) << error;
  auto tiny = sim.createSlice(gpuSlice(1, 3), error); // below one granule: one granule
  ASSERT_TRUE(tiny);
  EXPECT_EQ(*sim.sliceSms(*tiny), 8u);
  sim.destroySlice(*a);
  EXPECT_EQ(sim.freeSms(0), 68u);
  EXPECT_EQ(sim.liveSlices(), 2u);
}

TEST(SimGpu, ShareOfTheGpuWhenSmCountIsUnknown) {
  SimGpuBackend sim(twoH100());
  plan::GpuSlice s = gpuSlice(0, 0);
  s.set_slices_per_gpu(4);
  s.set_slices(1);
  std::string error;
  auto id = sim.createSlice(s, error);
  ASSERT_TRUE(id);
  EXPECT_EQ(*sim.sliceSms(*id), 32u); // 132 / 4 = 33, rounded down to granules of 8
}

TEST(SimGpu, AmpereGranuleFromTheArchitecture) {
  SimGpuConfig c;
  c.smCount = 108;
  c.minSmPartition = 4;
  c.smAlignment = 2;
  SimGpuBackend sim({c});
  EXPECT_EQ(sim.granule(0), 4u);
  std::string error;
  auto id = sim.createSlice(gpuSlice(0, 54), error);
  ASSERT_TRUE(id);
  EXPECT_EQ(*sim.sliceSms(*id), 52u);
}

TEST(SimGpu, ResizeInPlace) {
  SimGpuBackend sim(twoH100());
  std::string error;
  auto id = sim.createSlice(gpuSlice(0, 32), error);
  ASSERT_TRUE(id);
  EXPECT_TRUE(sim.resizeSlice(*id, 100, error)) << error;
  EXPECT_EQ(*sim.sliceSms(*id), 96u);
  EXPECT_FALSE(sim.resizeSlice(*id, 140, error));
  EXPECT_TRUE(sim.resizeSlice(*id, 16, error));
  EXPECT_EQ(sim.freeSms(0), 116u);
}

TEST(SimGpu, MpsWhereGreenContextsAreMissing) {
  std::vector<SimGpuConfig> gpus;
  std::string error;
  ASSERT_TRUE(parseSimGpuSpec("1x132sm:80g:nogreen", gpus, error));
  SimGpuBackend sim(gpus);
  auto id = sim.createSlice(gpuSlice(0, 66), error);
  ASSERT_TRUE(id);
  EXPECT_EQ(*sim.sliceSms(*id), 66u); // MPS is a percentage: no granule
  auto env = sim.workerEnvironment(*id);
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[1].first, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  EXPECT_EQ(env[1].second, "50");
}

TEST(SimGpu, SpecErrors) {
  std::vector<SimGpuConfig> gpus;
  std::string error;
  EXPECT_FALSE(parseSimGpuSpec("2x132", gpus, error));
  EXPECT_FALSE(parseSimGpuSpec("2x132sm:80q", gpus, error));
  EXPECT_NE(error.find("'80q'"), std::string::npos);
  EXPECT_TRUE(parseSimGpuSpec("1x144sm:141g,1x132sm", gpus, error));
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].memoryBytes, 141ull << 30);
  EXPECT_EQ(gpus[1].index, 1u);
}

TEST(SimGpu, LostGpu) {
  SimGpuBackend sim(twoH100());
  std::string error;
  auto id = sim.createSlice(gpuSlice(1, 64), error);
  ASSERT_TRUE(id);
  EXPECT_TRUE(sim.heartbeat(*id));
  ASSERT_TRUE(sim.injectFault(1, SimFault::Lost));
  EXPECT_FALSE(sim.heartbeat(*id));
  EXPECT_FALSE(sim.sample(*id));
  EXPECT_FALSE(sim.createSlice(gpuSlice(1, 8), error));
  EXPECT_NE(error.find("lost"), std::string::npos);
  // The other GPU is healthy: recovery moves there.
  EXPECT_TRUE(sim.createSlice(gpuSlice(0, 64), error));
  sim.injectFault(1, SimFault::None);
  EXPECT_TRUE(sim.heartbeat(*id));
  EXPECT_FALSE(sim.injectFault(7, SimFault::Lost));
}

TEST(SimGpu, CreateFailsKeepsExistingSlices) {
  SimGpuBackend sim(twoH100());
  std::string error;
  auto id = sim.createSlice(gpuSlice(0, 64), error);
  sim.injectFault(0, SimFault::CreateFails);
  EXPECT_FALSE(sim.createSlice(gpuSlice(0, 8), error));
  EXPECT_TRUE(sim.heartbeat(*id));
  EXPECT_TRUE(sim.sample(*id));
}

std::vector<SliceSample> run(SimGpuBackend &sim, SliceId id, int windows) {
  std::vector<SliceSample> out;
  for (int i = 0; i < windows; ++i)
    out.push_back(*sim.sample(id));
  return out;
}

TEST(SimGpu, DensityDriftIsDeterministic) {
  auto make = [] {
    auto sim = std::make_unique<SimGpuBackend>(twoH100());
    sim->setDensityDrift(0, {{5, 0.8}, {10, 1.0}});
    return sim;
  };
  auto a = make(), b = make();
  std::string error;
  auto ia = a->createSlice(gpuSlice(0, 64, 40ull << 30), error);
  auto ib = b->createSlice(gpuSlice(0, 64, 40ull << 30), error);
  auto sa = run(*a, *ia, 12), sb = run(*b, *ib, 12);
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].tflops, sb[i].tflops) << i;
    EXPECT_EQ(sa[i].temperatureMilliC, sb[i].temperatureMilliC) << i;
  }
  double full = 64 * 7.5 * 0.9;
  EXPECT_DOUBLE_EQ(sa[4].tflops, full);
  EXPECT_DOUBLE_EQ(sa[5].tflops, full * 0.8);
  EXPECT_DOUBLE_EQ(sa[9].tflops, full * 0.8);
  EXPECT_DOUBLE_EQ(sa[10].tflops, full);
  EXPECT_EQ(sa[0].memoryBytes, 20ull << 30);
  EXPECT_EQ(sa[0].sms, 64u);
}

TEST(SimGpu, DriftContinuesAcrossAHandOver) {
  SimGpuBackend sim(twoH100());
  sim.setDensityDrift(0, {{3, 0.5}});
  std::string error;
  auto old = sim.createSlice(gpuSlice(0, 32), error);
  run(sim, *old, 3);
  auto next = sim.createSlice(gpuSlice(0, 64), error); // new slice ready before the old goes
  sim.destroySlice(*old);
  auto s = sim.sample(*next);
  EXPECT_DOUBLE_EQ(s->tflops, 64 * 7.5 * 0.9 * 0.5); // window 3, not window 0 again
  EXPECT_EQ(sim.window(0), 4u);
}

TEST(SimGpu, TemperatureFollowsLoadAndCanBePinned) {
  SimGpuBackend sim(twoH100());
  std::string error;
  auto id = sim.createSlice(gpuSlice(0, 128), error);
  auto samples = run(sim, *id, 40);
  for (size_t i = 1; i < samples.size(); ++i)
    EXPECT_GE(samples[i].temperatureMilliC, samples[i - 1].temperatureMilliC);
  // 128 of 132 SMs at 0.9: settles at 40 C + 40 C * 0.8727 = 74.9 C
  EXPECT_NEAR(double(samples.back().temperatureMilliC), 40000 + 40000 * (128 * 0.9 / 132), 50);
  sim.setTemperature(0, 76000);
  EXPECT_EQ(sim.sample(*id)->temperatureMilliC, 76000);
  EXPECT_EQ(sim.sample(*id)->temperatureMilliC, 76000);
  sim.unpinTemperature(0);
  EXPECT_LT(sim.sample(*id)->temperatureMilliC, 76000);
  sim.setUtilisation(0, 0.0);
  auto cool = run(sim, *id, 60);
  EXPECT_NEAR(double(cool.back().temperatureMilliC), 40000, 50);
  EXPECT_DOUBLE_EQ(cool.back().tflops, 0);
}

TEST(SimGpu, ControlFileFromAnotherProcess) {
  std::string path = ::testing::TempDir() + "sim_control_" + std::to_string(::getpid());
  SimGpuBackend sim(twoH100(), path);
  std::string error;
  auto id = sim.createSlice(gpuSlice(1, 64), error);
  ASSERT_TRUE(id);
  {
    std::ofstream(path) << "# written by a test\ngpu 1 fault lost\nrdma mlx5_0 1 down\n";
  }
  EXPECT_FALSE(sim.heartbeat(*id));
  {
    std::ofstream(path) << "gpu 1 fault none\ngpu 1 temperature 71000\ngpu 1 drift 0:0.5 bogus\n";
  }
  EXPECT_TRUE(sim.heartbeat(*id));
  auto s = sim.sample(*id);
  EXPECT_EQ(s->temperatureMilliC, 71000);
  EXPECT_DOUBLE_EQ(s->tflops, 64 * 7.5 * 0.9); // the malformed drift line changed nothing
  std::remove(path.c_str());

  EXPECT_TRUE(sim.applyControl("gpu 0 drift 2:0.9 4:1.1", error)) << error;
  EXPECT_FALSE(sim.applyControl("gpu 9 fault lost", error));
  EXPECT_EQ(error, "no sim GPU 9");
  EXPECT_FALSE(sim.applyControl("gpu 0 fault melted", error));
  EXPECT_NE(error.find("unknown fault 'melted'"), std::string::npos);
  EXPECT_FALSE(sim.applyControl("gpu 0 utilisation 2", error));
  EXPECT_FALSE(sim.applyControl("gpu 0 colour red", error));
}

TEST(SimGpu, FromTopology) {
  hal::Topology t;
  hal::Vertex machine;
  hal::VertexId root = t.addVertex(machine);
  for (unsigned i = 0; i < 2; ++i) {
    hal::Vertex g;
    g.kind = hal::VertexKind::Gpu;
    g.name = "cuda" + std::to_string(i);
    hal::GpuInfo info;
    info.pci = *parsePciAddress(i ? "0000:41:00.0" : "0000:17:00.0");
    info.vendor = "NVIDIA";
    info.model = "H100";
    info.smCount = 132;
    info.memoryBytes = 80ull << 30;
    info.ccMajor = 9;
    info.temperatureMilliC = 35000 + 1000 * i;
    g.data = info;
    t.addVertex(std::move(g), root);
  }
  t.reindex();
  auto gpus = simGpusFromTopology(t);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].pciAddress, "0000:41:00.0");
  EXPECT_EQ(gpus[1].baseTemperatureMilliC, 36000);
  BackendOptions options;
  options.topology = &t;
  auto backend = createSimGpuBackend(options);
  plan::GpuSlice s = gpuSlice(0, 64);
  s.set_pci_address("0000:41:00.0"); // the PCI address wins over the index
  std::string error;
  auto id = backend->createSlice(s, error);
  ASSERT_TRUE(id) << error;
  EXPECT_EQ(*static_cast<SimGpuBackend &>(*backend).sliceGpu(*id), 1u);
}

} // namespace
