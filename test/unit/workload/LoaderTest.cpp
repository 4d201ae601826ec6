// mscale-train-sim's loader over the read-ahead reader: every sample the pread reader gives, in the same
// order, across files and epochs; a loader restored from any state continues with exactly the next
// sample; the shard scanner finds every record and refuses a shard that is not one.
#include "tools/mscale-train-sim/Dataset.h"

#include "test/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace msc::workload;

namespace {

// A private directory per test (test/unit/TestFiles.h).
struct TempDir : msc::test::TempDir {
  TempDir() : msc::test::TempDir("msc-loader") {}
};

std::vector<uint32_t> ids(Loader &l, size_t n) {
  std::vector<Sample> out;
  EXPECT_EQ(l.next(n, out), 0);
  std::vector<uint32_t> r;
  for (const Sample &s : out)
    r.push_back(s.id);
  return r;
}

std::unique_ptr<UringReader> readAhead() {
  std::string error;
  auto r = UringReader::create(4, scanRecords, error);
  EXPECT_TRUE(r) << error;
  return r;
}

TEST(Loader, ReadAheadGivesWhatPreadGivesAcrossFilesAndEpochs) {
  TempDir dir;
  std::string error;
  // ~90-byte records: 40000 of them over 3 shards are several 1 MiB blocks per shard.
  ASSERT_TRUE(generateDataset(dir.path, 40000, 3, error)) << error;
  PreadReader pread;
  auto uring = readAhead();
  Loader a(datasetFiles(dir.path), 7, pread), b(datasetFiles(dir.path), 7, *uring);
  for (int i = 0; i < 9; ++i) // 90000 samples: past the end of the first epoch and into the third
    ASSERT_EQ(ids(a, 10000), ids(b, 10000)) << i;
  EXPECT_EQ(a.state(), b.state());
  EXPECT_GT(uring->reader().stats().hits, 100000u);
  EXPECT_EQ(uring->reader().stats().misses, 0u); // each file's first read is at a record the index knows
  EXPECT_GE(uring->reader().stats().pastEnd, 6u); // the end of each file the loader went through
  for (const std::string &f : datasetFiles(dir.path))
    EXPECT_NE(uring->reader().index(f), nullptr) << f;
}

TEST(Loader, RestoredAtAnyStateContinuesWithTheNextSample) {
  TempDir dir;
  std::string error;
  ASSERT_TRUE(generateDataset(dir.path, 5000, 2, error)) << error;
  PreadReader pread;
  Loader ref(datasetFiles(dir.path), 3, pread);
  for (size_t step : {size_t{1}, size_t{777}, size_t{2499}, size_t{2500}, size_t{4321}}) {
    Loader walk(datasetFiles(dir.path), 3, pread);
    ids(walk, step);
    auto uring = readAhead();
    Loader resumed(datasetFiles(dir.path), 3, *uring);
    ASSERT_TRUE(resumed.restore(walk.state(), error)) << error;
    ASSERT_EQ(ids(resumed, 3000), ids(walk, 3000)) << step;
    EXPECT_EQ(uring->reader().stats().misses, 0u) << step; // the index starts the window at the record
  }
}

TEST(Loader, TheShardScannerFindsEveryRecordAndRefusesOthers) {
  TempDir dir;
  std::string error;
  ASSERT_TRUE(generateDataset(dir.path, 1000, 1, error)) << error;
  std::string shard = datasetFiles(dir.path).at(0);
  msc::worker::RecordIndex idx;
  ASSERT_TRUE(msc::worker::RecordIndex::load(shard, scanRecords, idx, error)) << error;
  ASSERT_EQ(idx.records().size(), 1000u);
  EXPECT_EQ(idx.records().back().end(), std::filesystem::file_size(shard));
  // The cache is hidden, so it is never taken for a shard.
  EXPECT_EQ(datasetFiles(dir.path).size(), 1u);

  std::filesystem::resize_file(shard, std::filesystem::file_size(shard) - 1); // the last record cut short
  EXPECT_FALSE(msc::worker::RecordIndex::load(shard, scanRecords, idx, error));
  EXPECT_NE(error.find("no record at offset"), std::string::npos) << error;
  std::ofstream(shard, std::ios::binary) << std::string(200, 'x');
  EXPECT_FALSE(msc::worker::RecordIndex::load(shard, scanRecords, idx, error));
  EXPECT_NE(error.find("no record at offset 0"), std::string::npos) << error;
}

} // namespace
