// The cuda backend: "no driver" on this machine and with the toolkit's stub library, and every
// code path against a fake libcuda.so.1 (green contexts, MPS fallback, driver errors).
#include "TestUtil.h"

#include "executor/gpu/GpuBackends.h"

#include <dlfcn.h>

#include <filesystem>

using namespace msc;
using namespace msc::exec;
using msc::exec::test::gpuSlice;
using msc::exec::test::ScopedEnv;

namespace {

struct Counters {
  int green = 0, streams = 0, pools = 0, priority = 0, greenSms = 0;
};

Counters counters() {
  Counters c;
  void *h = ::dlopen(MSC_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    return c;
  auto fn = reinterpret_cast<void (*)(int *, int *, int *, int *, int *)>(::dlsym(h, "fakeCudaCounters"));
  fn(&c.green, &c.streams, &c.pools, &c.priority, &c.greenSms);
  ::dlclose(h);
  return c;
}

BackendOptions fakeDriver() {
  BackendOptions o;
  o.cudaLibrary = MSC_FAKE_CUDA_LIB;
  o.nvmlLibrary = "libnvidia-ml-absent.so.1";
  return o;
}

TEST(CudaBackend, MissingLibraryIsNoDriver) {
  BackendOptions o;
  o.cudaLibrary = "libcuda-absent.so.1";
  CudaProbe p = probeCuda(o);
  EXPECT_FALSE(p.available);
  EXPECT_EQ(p.why.rfind("no libcuda-absent.so.1", 0), 0u) << p.why;
  std::string why;
  EXPECT_EQ(createCudaBackend(o, why), nullptr);
  EXPECT_EQ(why, p.why);
}

TEST(CudaBackend, ThisMachineHasNoDriver) {
  BackendOptions o;
  CudaProbe p = probeCuda(o);
  if (p.available)
    GTEST_SKIP() << "a CUDA driver answers here: " << p.why;
  EXPECT_FALSE(p.why.empty());
  EXPECT_EQ(p.library, "libcuda.so.1");
}

TEST(CudaBackend, StubLibraryIsNoDriver) {
  if (!std::filesystem::exists(MSC_CUDA_STUB_LIB))
    GTEST_SKIP() << "no " << MSC_CUDA_STUB_LIB;
  ScopedEnv env;
  env.set("MSCALE_CUDA_LIBRARY", MSC_CUDA_STUB_LIB); // the override the agent honours too
  CudaProbe p = probeCuda(BackendOptions{});
  EXPECT_FALSE(p.available);
  EXPECT_EQ(p.library, MSC_CUDA_STUB_LIB);
  EXPECT_NE(p.why.find("stub library"), std::string::npos) << p.why;
}

TEST(CudaBackend, AutoSelectsSimAndSaysWhy) {
  BackendOptions o;
  o.cudaLibrary = "libcuda-absent.so.1";
  std::string why;
  auto b = selectGpuBackend(o, why);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->name(), "sim");
  EXPECT_EQ(why.rfind("sim: no libcuda-absent.so.1", 0), 0u) << why;
}

TEST(CudaBackend, ExplicitCudaWithoutDriverIsAnError) {
  test::ApplyFixture f;
  BackendOptions o;
  o.gpu = "cuda";
  o.cudaLibrary = "libcuda-absent.so.1";
  std::string why;
  EXPECT_EQ(selectGpuBackend(o, why, &f.diags), nullptr);
  ASSERT_TRUE(f.emitted(DiagCode::ERR_GPU_001));
  EXPECT_NE(f.message(DiagCode::ERR_GPU_001).find("gpu backend 'cuda' is not available: no libcuda-absent.so.1"),
            std::string::npos);
  o.gpu = "rocm";
  EXPECT_EQ(selectGpuBackend(o, why, &f.diags), nullptr);
  EXPECT_EQ(f.message(DiagCode::ERR_GPU_002), "unknown gpu backend 'rocm' (expected 'auto', 'cuda' or 'sim')");
}

TEST(CudaBackend, FakeDriverSelectedByAuto) {
  std::string why;
  auto b = selectGpuBackend(fakeDriver(), why);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->name(), "cuda");
  EXPECT_EQ(why, "cuda: driver 13.0, 1 device(s), green contexts");
}

TEST(CudaBackend, GreenContextSlices) {
  std::string why;
  auto b = createCudaBackend(fakeDriver(), why);
  ASSERT_TRUE(b) << why;
  std::string error;
  auto s1 = gpuSlice(0, 66, 8ull << 30);
  s1.set_stream_priority(-10); // clamped to the device's greatest priority (-5 here)
  auto a = b->createSlice(s1, error);
  ASSERT_TRUE(a) << error;
  Counters c = counters();
  EXPECT_EQ(c.greenSms, 64);
  EXPECT_EQ(c.priority, -5);
  auto second = b->createSlice(gpuSlice(0, 64, 8ull << 30), error);
  ASSERT_TRUE(second) << error;
  c = counters();
  EXPECT_EQ(c.green, 2);
  EXPECT_EQ(c.streams, 2);
  EXPECT_EQ(c.pools, 2);
  EXPECT_FALSE(b->createSlice(gpuSlice(0, 8), error)); // 132 SMs = 16 granules of 8, all taken
  EXPECT_NE(error.find("has 0 free SMs in granules of 8"), std::string::npos) << error;
  EXPECT_TRUE(b->heartbeat(*a));
  auto sample = b->sample(*a);
  ASSERT_TRUE(sample);
  EXPECT_EQ(sample->sms, 64u);
  EXPECT_EQ(sample->temperatureMilliC, kUnknownTemperature); // no NVML
  EXPECT_EQ(sample->memoryBytes, 10ull << 30);
  auto env = b->workerEnvironment(*a);
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].second, "cuda");
  b->destroySlice(*a);
  b->destroySlice(*second);
  c = counters();
  EXPECT_EQ(c.green + c.streams + c.pools, 0);
  EXPECT_FALSE(b->heartbeat(*a));
}

TEST(CudaBackend, ResizeHandsOverToANewGreenContext) {
  std::string why;
  auto b = createCudaBackend(fakeDriver(), why);
  ASSERT_TRUE(b);
  std::string error;
  auto id = b->createSlice(gpuSlice(0, 32), error);
  ASSERT_TRUE(id);
  EXPECT_TRUE(b->resizeSlice(*id, 96, error)) << error;
  EXPECT_EQ(counters().greenSms, 96);
  EXPECT_EQ(counters().green, 1);
  EXPECT_EQ(b->sample(*id)->sms, 96u);
  EXPECT_TRUE(b->resizeSlice(*id, 16, error));
  EXPECT_EQ(b->sample(*id)->sms, 16u);
  EXPECT_FALSE(b->resizeSlice(*id, 200, error));
  EXPECT_EQ(b->sample(*id)->sms, 16u);
  b->destroySlice(*id);
  EXPECT_EQ(counters().green, 0);
}

TEST(CudaBackend, MpsFallbackWithoutGreenContexts) {
  ScopedEnv env;
  env.set("FAKE_CUDA_NO_GREEN", "1");
  std::string why;
  auto b = createCudaBackend(fakeDriver(), why);
  ASSERT_TRUE(b);
  EXPECT_NE(why.find("no green contexts (MPS)"), std::string::npos) << why;
  std::string error;
  auto id = b->createSlice(gpuSlice(0, 33), error);
  ASSERT_TRUE(id) << error;
  EXPECT_EQ(counters().green, 0);
  auto vars = b->workerEnvironment(*id);
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[1], std::make_pair(std::string("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), std::string("25")));
  b->destroySlice(*id);
}

TEST(CudaBackend, DriverErrorsNameTheCallAndTheError) {
  ScopedEnv env;
  env.set("FAKE_CUDA_FAIL", "cuGreenCtxCreate");
  std::string why;
  auto b = createCudaBackend(fakeDriver(), why);
  ASSERT_TRUE(b);
  std::string error;
  EXPECT_FALSE(b->createSlice(gpuSlice(0, 64), error));
  EXPECT_EQ(error, "cuda: GPU 0000:01:00.0: cuGreenCtxCreate: CUDA_ERROR_OUT_OF_MEMORY (2)");
  EXPECT_FALSE(b->createSlice(gpuSlice(3, 64), error));
  EXPECT_EQ(error, "cuda: GPU 3: cuDeviceGet: CUDA_ERROR_INVALID_DEVICE (101)");
}

TEST(CudaBackend, PoolFailureUndoesTheSlice) {
  ScopedEnv env;
  env.set("FAKE_CUDA_FAIL", "cuMemPoolCreate");
  std::string why;
  auto b = createCudaBackend(fakeDriver(), why);
  std::string error;
  EXPECT_FALSE(b->createSlice(gpuSlice(0, 64, 1ull << 30), error));
  EXPECT_NE(error.find("cuMemPoolCreate: CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << error;
  Counters c = counters();
  EXPECT_EQ(c.green + c.streams + c.pools, 0);
  EXPECT_TRUE(b->createSlice(gpuSlice(0, 128), error)) << "the granules were given back: " << error;
}

TEST(CudaBackend, InitErrors) {
  ScopedEnv env;
  env.set("FAKE_CUDA_INIT", "100");
  CudaProbe p = probeCuda(fakeDriver());
  EXPECT_FALSE(p.available);
  EXPECT_EQ(p.why, "no CUDA devices (cuInit: CUDA_ERROR_NO_DEVICE)");
  env.set("FAKE_CUDA_INIT", "34");
  EXPECT_EQ(probeCuda(fakeDriver()).why, "stub library (cuInit: CUDA_ERROR_STUB_LIBRARY)");
  env.set("FAKE_CUDA_INIT", "0");
  env.set("FAKE_CUDA_DEVICES", "0");
  EXPECT_EQ(probeCuda(fakeDriver()).why, "no CUDA devices");
}

} // namespace
