// Tests of reading the interposer's counters files (bpf/InterposerCounters.h) against files written
// here in the interposer's layout (interposer/cuda_counters.h): sums over threads and processes,
// the difference of two readings, and files that are not counters files. No BPF, no root.
#include "bpf/InterposerCounters.h"
#include "interposer/cuda_counters.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

using namespace msc;
using namespace msc::trace;

namespace {

struct CountersDir {
  std::string path;
  CountersDir() {
    std::string templ = std::filesystem::temp_directory_path().string() + "/msc-counters-test.XXXXXX";
    path = ::mkdtemp(templ.data()) ? templ : "";
  }
  ~CountersDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  // A file of process `pid`: function 0 "cuLaunchKernel" (counted), 1 "cuCtxSynchronize" (timed)
  // and 2 "cuNotInTheTable"; `calls` per thread for `threads` threads.
  void write(int pid, uint32_t threads, uint64_t calls) const {
    auto f = std::make_unique<msc_counters_file>();
    std::memset(f.get(), 0, sizeof(*f));
    f->magic = MSC_COUNTERS_MAGIC;
    f->version = MSC_COUNTERS_VERSION;
    f->pid = static_cast<uint32_t>(pid);
    f->functions = 3;
    f->threads_used = threads;
    f->timed_mask = 1u << 1;
    std::strcpy(f->comm, "worker");
    std::strcpy(f->names[0], "cuLaunchKernel");
    std::strcpy(f->names[1], "cuCtxSynchronize");
    std::strcpy(f->names[2], "cuNotInTheTable");
    for (uint32_t t = 0; t < threads; ++t) {
      f->thread[t].fn[0].calls = calls;
      f->thread[t].fn[1].calls = calls;
      f->thread[t].fn[1].errors = 1;
      f->thread[t].fn[1].total_ns = calls * 1000;
      f->thread[t].fn[1].max_ns = 1000 + t;
      f->thread[t].fn[1].histogram[9] = calls;
      f->thread[t].fn[2].calls = calls;
    }
    std::ofstream out(path + "/" + std::to_string(pid) + MSC_COUNTERS_SUFFIX, std::ios::binary);
    out.write(reinterpret_cast<const char *>(f.get()), sizeof(*f));
  }
};

} // namespace

TEST(InterposerCounters, SumsThreadsAndProcessesByName) {
  CountersDir dir;
  ASSERT_FALSE(dir.path.empty());
  dir.write(100, 3, 7);
  dir.write(200, 1, 5);
  CollectingConsumer c;
  DiagnosticEngine diags(nullptr, c);
  std::optional<CounterReading> r = readCounters(dir.path, {}, diags);
  ASSERT_TRUE(r);
  EXPECT_TRUE(c.diags.empty());
  ASSERT_EQ(r->processes.size(), 2u);
  EXPECT_EQ(r->processes[100].comm, "worker");
  TraceResults res;
  fillResults(*r, "/lib/interposer.so", res);
  EXPECT_EQ(res.mechanism, "interposer");
  EXPECT_EQ(res.pids, (std::vector<int>{100, 200}));
  ASSERT_EQ(res.functions.size(), 2u); // the unknown name is left out
  const FunctionStats *launch = res.stats("cuLaunchKernel"), *sync = res.stats("cuCtxSynchronize");
  ASSERT_TRUE(launch && sync);
  EXPECT_EQ(launch->calls, 3u * 7 + 5);
  EXPECT_FALSE(launch->timed);
  EXPECT_EQ(sync->calls, 3u * 7 + 5);
  EXPECT_TRUE(sync->timed);
  EXPECT_EQ(sync->errors, 4u);
  EXPECT_EQ(sync->maxNs, 1002u);
  EXPECT_EQ(sync->histogram[9], 3u * 7 + 5);
  EXPECT_EQ(res.enters, 2u * (3 * 7 + 5));

  std::optional<CounterReading> only = readCounters(dir.path, {200}, diags);
  ASSERT_TRUE(only);
  EXPECT_EQ(only->processes.size(), 1u);
}

TEST(InterposerCounters, AWindowIsTheDifferenceOfTwoReadings) {
  CountersDir dir;
  dir.write(100, 2, 10);
  CollectingConsumer c;
  DiagnosticEngine diags(nullptr, c);
  std::optional<CounterReading> before = readCounters(dir.path, {}, diags);
  dir.write(100, 2, 25); // the same process went on
  dir.write(300, 1, 4);  // a new one started
  std::optional<CounterReading> after = readCounters(dir.path, {}, diags);
  ASSERT_TRUE(before && after);
  TraceResults res;
  fillResults(subtract(*after, *before), "", res);
  EXPECT_EQ(res.stats("cuLaunchKernel")->calls, 2u * 15 + 4);
  EXPECT_EQ(res.stats("cuCtxSynchronize")->histogram[9], 2u * 15 + 4);
}

TEST(InterposerCounters, OtherFilesAreSkippedOrIgnored) {
  CountersDir dir;
  dir.write(100, 1, 1);
  std::ofstream(dir.path + "/4242" MSC_COUNTERS_SUFFIX) << "junk";
  std::ofstream(dir.path + "/notes.txt") << "not ours";
  CollectingConsumer c;
  DiagnosticEngine diags(nullptr, c);
  std::optional<CounterReading> r = readCounters(dir.path, {}, diags);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->processes.size(), 1u);
  ASSERT_EQ(c.diags.size(), 1u);
  EXPECT_EQ(c.diags[0].code, DiagCode::WRN_TRACE_004);

  CollectingConsumer c2;
  DiagnosticEngine diags2(nullptr, c2);
  EXPECT_FALSE(readCounters(dir.path + "/missing", {}, diags2));
  ASSERT_EQ(c2.diags.size(), 1u);
  EXPECT_EQ(c2.diags[0].code, DiagCode::ERR_TRACE_013);
}
