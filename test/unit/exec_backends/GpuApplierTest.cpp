// The GPU applier: all slices or none, the worker's environment, roll-back.
#include "TestUtil.h"

#include "executor/gpu/GpuApplier.h"
#include "executor/gpu/GpuBackends.h"
#include "executor/gpu/SimGpuBackend.h"

using namespace msc;
using namespace msc::exec;
using msc::exec::test::ApplyFixture;
using msc::exec::test::gpuSlice;
using msc::exec::test::ScopedEnv;

namespace {

std::unique_ptr<SimGpuBackend> sim(const char *spec = "2x132sm:80g") {
  std::vector<SimGpuConfig> gpus;
  std::string error;
  EXPECT_TRUE(parseSimGpuSpec(spec, gpus, error));
  return std::make_unique<SimGpuBackend>(gpus);
}

TEST(GpuApplier, AppliesEverySliceAndTellsTheWorker) {
  auto backend = sim();
  ApplyFixture f;
  *f.plan.add_gpu_slices() = gpuSlice(0, 64, 40ull << 30, "trainer");
  auto s = gpuSlice(1, 66, 20ull << 30, "decoder");
  s.set_stream_priority(-2);
  *f.plan.add_gpu_slices() = s;
  auto applier = createGpuApplier(*backend, [&](const std::string &l) { f.log.push_back(l); });
  EXPECT_EQ(applier->name(), "gpu");
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(f.consumer.diags.size(), 0u);
  EXPECT_EQ(backend->liveSlices(), 2u);
  EXPECT_EQ(f.env("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  EXPECT_EQ(f.env("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(f.env("MSCALE_GPU_BACKEND"), "sim");
  EXPECT_EQ(f.env("MSCALE_GPU_SLICES"), "trainer@0:64:42949672960:0;decoder@1:64:21474836480:-2");
  AppliedState state;
  applier->state(state);
  EXPECT_EQ(state.gpuSlices, f.env("MSCALE_GPU_SLICES")) << "the same, typed, for the executor's own use";
  EXPECT_EQ(f.env("MSCALE_GPU_SLICE_IDS"), "1,2");
  EXPECT_EQ(f.env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "<unset>");
  ASSERT_FALSE(f.log.empty());
  EXPECT_EQ(f.log[0], "backend 'sim' (simulated GPUs, no device is touched), 2 slice(s)");
  const auto *slices = appliedGpuSlices(*applier);
  ASSERT_TRUE(slices);
  EXPECT_EQ(slices->size(), 2u);
  EXPECT_EQ((*slices)[1].role, "decoder");

  applier->rollback(ctx);
  EXPECT_EQ(backend->liveSlices(), 0u);
  EXPECT_TRUE(f.worker.variables.empty());
}

TEST(GpuApplier, UuidsAndSharedDevices) {
  auto backend = sim();
  ApplyFixture f;
  auto a = gpuSlice(1, 32, 0, "a");
  a.set_uuid("5e1e2a3b-0000-1111-2222-333344445555");
  auto b = a;
  b.set_role("b");
  *f.plan.add_gpu_slices() = a;
  *f.plan.add_gpu_slices() = b;
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(f.env("CUDA_VISIBLE_DEVICES"), "GPU-5e1e2a3b-0000-1111-2222-333344445555");
  EXPECT_EQ(f.env("MSCALE_GPU_SLICES"), "a@0:32:0:0;b@0:32:0:0");
}

TEST(GpuApplier, FailureInTheSecondSliceDestroysTheFirst) {
  auto backend = sim();
  backend->injectFault(1, SimFault::CreateFails);
  ApplyFixture f;
  *f.plan.add_gpu_slices() = gpuSlice(0, 64);
  *f.plan.add_gpu_slices() = gpuSlice(1, 64, 0, "decoder");
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context();
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_EQ(backend->liveSlices(), 0u);
  EXPECT_EQ(backend->freeSms(0), 132u);
  ASSERT_TRUE(f.emitted(DiagCode::ERR_GPU_003));
  EXPECT_EQ(f.message(DiagCode::ERR_GPU_003),
            "cannot create gpu slice 1 of role 'decoder' on gpu 1 (backend 'sim'): sim: slice creation on GPU 1 "
            "fails (injected fault)");
  EXPECT_TRUE(f.worker.variables.empty());
}

TEST(GpuApplier, InjectedFailureRollsBack) {
  auto backend = sim();
  ApplyFixture f;
  f.inject.failIn = "gpu";
  *f.plan.add_gpu_slices() = gpuSlice(0, 64);
  *f.plan.add_gpu_slices() = gpuSlice(1, 64);
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context(true);
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_EQ(f.message(DiagCode::ERR_GPU_004), "injected failure in the gpu applier before slice 1");
  EXPECT_EQ(backend->liveSlices(), 0u);

  f.inject.failIn = "cpu"; // another applier's injection does not touch this one
  auto ctx2 = f.context(true);
  EXPECT_TRUE(applier->apply(ctx2));
  applier->rollback(ctx2);
}

TEST(GpuApplier, MpsFallbackWarnsAndLimitsMemory) {
  auto backend = sim("1x132sm:80g:nogreen");
  ApplyFixture f;
  *f.plan.add_gpu_slices() = gpuSlice(0, 66, 4ull << 30, "trainer");
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(f.message(DiagCode::WRN_GPU_001),
            "gpu 0 has no green contexts: slice of role 'trainer' uses MPS with 50 percent of the SMs");
  EXPECT_EQ(f.env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
  EXPECT_EQ(f.env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=4096M");
  applier->rollback(ctx);
}

TEST(GpuApplier, OverTheCudaBackend) {
  // The same applier over the cuda backend and the fake driver: the second slice fails in the
  // driver, the first green context is destroyed.
  ScopedEnv env;
  env.set("FAKE_CUDA_FAIL", "cuGreenCtxCreate");
  env.set("FAKE_CUDA_FAIL_AFTER", "1");
  BackendOptions o;
  o.gpu = "cuda";
  o.cudaLibrary = MSC_FAKE_CUDA_LIB;
  std::string why;
  auto backend = selectGpuBackend(o, why);
  ASSERT_TRUE(backend) << why;
  ApplyFixture f;
  *f.plan.add_gpu_slices() = gpuSlice(0, 64);
  *f.plan.add_gpu_slices() = gpuSlice(0, 64, 0, "decoder");
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context();
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_EQ(f.message(DiagCode::ERR_GPU_003),
            "cannot create gpu slice 1 of role 'decoder' on gpu 0 (backend 'cuda'): cuda: GPU 0000:01:00.0: "
            "cuGreenCtxCreate: CUDA_ERROR_OUT_OF_MEMORY (2)");
  std::string error;
  EXPECT_TRUE(backend->createSlice(gpuSlice(0, 128), error)) << "all granules are free again: " << error;
}

} // namespace

// Hand-over (resizes and moves off a lost GPU): the new slice exists before the old one goes.
TEST(GpuApplier, HandOverCreatesTheNewSliceFirstAndKeepsTheOldUntilRetired) {
  auto backend = sim("2x132sm:80g");
  ApplyFixture f;
  *f.plan.add_gpu_slices() = gpuSlice(0, 32, 0, "trainer");
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  SliceId old = (*appliedGpuSlices(*applier))[0].id;

  plan::Plan next = f.plan;
  next.mutable_gpu_slices(0)->set_sm_count(64);
  next.mutable_gpu_slices(0)->set_slices(2);
  ApplyContext nextCtx{next, "c-test", ctx.log, f.diags, f.worker, nullptr};
  std::vector<SliceId> retiring;
  std::vector<std::string> changes;
  std::string error;
  ASSERT_TRUE(replaceGpuSlices(*applier, nextCtx, retiring, changes, error)) << error;
  ASSERT_EQ(retiring, std::vector<SliceId>{old});
  EXPECT_EQ(backend->liveSlices(), 2u); // both, until the worker has moved
  SliceId now = (*appliedGpuSlices(*applier))[0].id;
  EXPECT_NE(now, old);
  EXPECT_EQ(backend->sliceSms(now), 64u);
  EXPECT_EQ(f.env("MSCALE_GPU_SLICES"), "trainer@0:64:0:0");
  AppliedState handedOver;
  applier->state(handedOver);
  EXPECT_EQ(handedOver.gpuSlices, "trainer@0:64:0:0") << "the hand-over's slices, as the worker is told of them";
  retireGpuSlices(*applier, retiring);
  EXPECT_EQ(backend->liveSlices(), 1u);
  applier->rollback(ctx);
  EXPECT_EQ(backend->liveSlices(), 0u);
  AppliedState released;
  applier->state(released);
  EXPECT_TRUE(released.gpuSlices.empty());
}

TEST(GpuApplier, HandOverWithoutRoomForBothResizesInPlace) {
  auto backend = sim("1x132sm:80g");
  ApplyFixture f;
  *f.plan.add_gpu_slices() = gpuSlice(0, 80, 0, "trainer");
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  SliceId id = (*appliedGpuSlices(*applier))[0].id;
  plan::Plan next = f.plan;
  next.mutable_gpu_slices(0)->set_sm_count(112); // 80 + 112 > 132: no room for both
  ApplyContext nextCtx{next, "c-test", ctx.log, f.diags, f.worker, nullptr};
  std::vector<SliceId> retiring;
  std::vector<std::string> changes;
  std::string error;
  ASSERT_TRUE(replaceGpuSlices(*applier, nextCtx, retiring, changes, error)) << error;
  EXPECT_TRUE(retiring.empty());
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("resized in place"), std::string::npos) << changes[0];
  EXPECT_EQ(backend->sliceSms(id), 112u);
  applier->rollback(ctx);
}

TEST(GpuApplier, FailedHandOverChangesNothing) {
  auto backend = sim("2x132sm:80g");
  ApplyFixture f;
  *f.plan.add_gpu_slices() = gpuSlice(0, 32, 0, "trainer");
  *f.plan.add_gpu_slices() = gpuSlice(1, 32, 0, "decoder");
  auto applier = createGpuApplier(*backend);
  auto ctx = f.context();
  ASSERT_TRUE(applier->apply(ctx));
  std::string slicesBefore = f.env("MSCALE_GPU_SLICES");
  plan::Plan next = f.plan;
  next.mutable_gpu_slices(0)->set_sm_count(64);   // fits
  next.mutable_gpu_slices(1)->set_sm_count(400);  // cannot fit anywhere
  ApplyContext nextCtx{next, "c-test", ctx.log, f.diags, f.worker, nullptr};
  std::vector<SliceId> retiring;
  std::vector<std::string> changes;
  std::string error;
  EXPECT_FALSE(replaceGpuSlices(*applier, nextCtx, retiring, changes, error));
  EXPECT_NE(error.find("slice 1 role 'decoder' on gpu 1"), std::string::npos) << error;
  EXPECT_EQ(backend->liveSlices(), 2u); // the first entry's new slice was destroyed again
  EXPECT_EQ(backend->sliceSms((*appliedGpuSlices(*applier))[0].id), 32u);
  EXPECT_EQ(f.env("MSCALE_GPU_SLICES"), slicesBefore);
  applier->rollback(ctx);
}
