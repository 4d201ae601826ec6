// The C ABI, loaded the way Python's ctypes loads it: dlopen of libmscale_snapshot.so and dlsym of
// each function. Also checks that only the C ABI is exported.
#include "worker/snapshot/mscale_snapshot.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

class CApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    lib = ::dlopen(MSC_SNAPSHOT_SO, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << ::dlerror();
    char tmpl[] = "/tmp/msc-snapcapi-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
    shm = "msc-snapcapi-" + std::to_string(::getpid());
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    ::shm_unlink(("/" + shm).c_str());
    if (lib)
      ::dlclose(lib);
  }
  template <class F> F fn(const char *name) {
    void *p = ::dlsym(lib, name);
    EXPECT_NE(p, nullptr) << name << " is not exported";
    return reinterpret_cast<F>(p);
  }
  void *lib = nullptr;
  std::string dir, shm;
};

#define SYM(name) auto name = fn<decltype(&::name)>(#name)

TEST_F(CApiTest, RoundTripThroughDlopen) {
  SYM(msc_snap_abi_version);
  SYM(msc_snap_open);
  SYM(msc_snap_close);
  SYM(msc_snap_begin);
  SYM(msc_snap_add_blob);
  SYM(msc_snap_set_loader);
  SYM(msc_snap_set_lr);
  SYM(msc_snap_set_loss_scale);
  SYM(msc_snap_commit);
  SYM(msc_snap_restore);
  SYM(msc_snap_restored_step);
  SYM(msc_snap_restored_tier);
  SYM(msc_snap_restored_blob);
  SYM(msc_snap_restored_loader);
  SYM(msc_snap_restored_lr);
  SYM(msc_snap_restored_loss_scale);
  SYM(msc_snap_restored_free);
  SYM(msc_snap_destroy_memory_tier);
  SYM(msc_snap_restore_at_most);
  SYM(msc_snap_list_steps);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(msc_snap_abi_version(), MSC_SNAP_ABI_VERSION);

  std::string disk = dir + "/snaps";
  msc_snap_options o = {disk.c_str(), 1, -1, shm.c_str(), 2, 2};
  msc_snap_store *store = nullptr;
  ASSERT_EQ(msc_snap_open(&o, &store), 0);
  std::vector<float> params(1000);
  for (size_t i = 0; i < params.size(); ++i)
    params[i] = static_cast<float>(i) * 0.5f;
  uint64_t rng[2] = {0x1234, 0x5678};
  double lrParams[3] = {10, 100, 0.01};
  uint64_t hs[2] = {0, 10};
  double hv[2] = {4096, 8192};
  for (uint64_t step : {10, 20}) {
    msc_snap_writer *w = nullptr;
    ASSERT_EQ(msc_snap_begin(store, step, &w), 0);
    ASSERT_EQ(msc_snap_add_blob(w, "model", MSC_SNAP_MODEL, params.data(), params.size() * sizeof(float)), 0);
    ASSERT_EQ(msc_snap_add_blob(w, "rng", MSC_SNAP_RNG, rng, sizeof rng), 0);
    ASSERT_EQ(msc_snap_set_loader(w, "shard-002.dat", 777 + step, 42, 1, 2, 96), 0);
    ASSERT_EQ(msc_snap_set_lr(w, "warmup-cosine", 0.2, 0.15, step, lrParams, 3), 0);
    ASSERT_EQ(msc_snap_set_loss_scale(w, 8192, 3, hs, hv, 2), 0);
    ASSERT_EQ(msc_snap_commit(w, MSC_SNAP_TIER_BOTH), 0);
  }

  msc_snap_restored *r = nullptr;
  ASSERT_EQ(msc_snap_restore(store, &r), 0);
  EXPECT_EQ(msc_snap_restored_step(r), 20u);
  EXPECT_STREQ(msc_snap_restored_tier(r), "memory");
  const void *data;
  uint64_t size;
  ASSERT_EQ(msc_snap_restored_blob(r, "model", &data, &size), 0);
  ASSERT_EQ(size, params.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(data, params.data(), size), 0);
  const char *file;
  uint64_t off, seed, epoch, fileIndex, seen;
  ASSERT_EQ(msc_snap_restored_loader(r, &file, &off, &seed, &epoch, &fileIndex, &seen), 0);
  EXPECT_STREQ(file, "shard-002.dat");
  EXPECT_EQ(off, 797u);
  EXPECT_EQ(seed, 42u);
  EXPECT_EQ(fileIndex, 2u);
  EXPECT_EQ(seen, 96u);
  double base, cur, scale;
  uint64_t last, tracker, nHist;
  ASSERT_EQ(msc_snap_restored_lr(r, &base, &cur, &last), 0);
  EXPECT_EQ(cur, 0.15);
  EXPECT_EQ(last, 20u);
  ASSERT_EQ(msc_snap_restored_loss_scale(r, &scale, &tracker, &nHist), 0);
  EXPECT_EQ(scale, 8192);
  EXPECT_EQ(nHist, 2u);
  msc_snap_restored_free(r);

  // The steps present, newest first (memory and disk each hold 10 and 20), and a step bound.
  uint64_t steps[8] = {};
  ASSERT_EQ(msc_snap_list_steps(store, steps, 8), 4u);
  EXPECT_EQ(steps[0], 20u);
  EXPECT_EQ(steps[3], 10u);
  EXPECT_EQ(msc_snap_list_steps(store, nullptr, 0), 4u);
  ASSERT_EQ(msc_snap_restore_at_most(store, 19, &r), 0);
  EXPECT_EQ(msc_snap_restored_step(r), 10u);
  msc_snap_restored_free(r);
  EXPECT_EQ(msc_snap_restore_at_most(store, 5, &r), 3); // ERR_SNAP_003: nothing that old

  msc_snap_destroy_memory_tier(store); // node loss: the disk tier answers
  ASSERT_EQ(msc_snap_restore(store, &r), 0);
  EXPECT_STREQ(msc_snap_restored_tier(r), "disk");
  EXPECT_EQ(msc_snap_restored_step(r), 20u);
  msc_snap_restored_free(r);
  msc_snap_close(store);
}

TEST_F(CApiTest, ErrorsAreCodedNumbers) {
  SYM(msc_snap_open);
  SYM(msc_snap_restore);
  SYM(msc_snap_restored_blob);
  SYM(msc_snap_last_error);
  SYM(msc_snap_code_name);
  SYM(msc_snap_close);
  SYM(msc_snap_begin);
  SYM(msc_snap_commit);
  SYM(msc_snap_restored_free);
  ASSERT_FALSE(HasFailure());
  std::string disk = dir + "/snaps";
  msc_snap_options o = {disk.c_str(), 0, -1, nullptr, 0, 0};
  msc_snap_store *store = nullptr;
  ASSERT_EQ(msc_snap_open(&o, &store), 0);
  msc_snap_restored *r = nullptr;
  EXPECT_EQ(msc_snap_restore(store, &r), 3);
  EXPECT_STREQ(msc_snap_code_name(3), "ERR_SNAP_003");
  EXPECT_EQ(std::string(msc_snap_last_error()), "error[ERR_SNAP_003]: no snapshot to restore in '" + disk + "'");
  msc_snap_writer *w;
  ASSERT_EQ(msc_snap_begin(store, 1, &w), 0);
  ASSERT_EQ(msc_snap_commit(w, MSC_SNAP_TIER_BOTH), 0);
  ASSERT_EQ(msc_snap_restore(store, &r), 0);
  const void *d;
  uint64_t n;
  EXPECT_EQ(msc_snap_restored_blob(r, "nope", &d, &n), 11);
  EXPECT_NE(std::string(msc_snap_last_error()).find("ERR_SNAP_011"), std::string::npos);
  msc_snap_restored_free(r);
  msc_snap_close(store);
  msc_snap_options bad = {nullptr, 0, -1, nullptr, 0, 0};
  EXPECT_EQ(msc_snap_open(&bad, &store), 9);
}

TEST_F(CApiTest, OnlyTheCAbiIsExported) {
  // A C++ symbol of the library must not leak out of the shared object.
  EXPECT_EQ(::dlsym(lib, "_ZN3msc8snapshot6hash64EPKvmm"), nullptr);
  EXPECT_NE(::dlsym(lib, "msc_snap_open"), nullptr);
}

} // namespace
