// RecordIndex: scanned once and then read from its cache beside the file; scanned again when the file
// changes (size or mtime) and whenever the cache is corrupt or truncated, never trusted then.
#include "worker/RecordIndex.h"

#include "test/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace msc::worker;

namespace {

// A private directory per test (test/unit/TestFiles.h).
struct TempDir : msc::test::TempDir {
  TempDir() : msc::test::TempDir("msc-ridx") {}
};

// Records of the test format: a length byte n, then n bytes. Counts the scans it makes.
struct LengthPrefixed {
  int scans = 0;
  RecordIndex::Scanner scanner() {
    return [this](int fd, uint64_t size, std::vector<RecordSpan> &out, std::string &error) {
      ++scans;
      std::string b(size, '\0');
      if (::pread(fd, b.data(), size, 0) != static_cast<ssize_t>(size)) {
        error = "short read";
        return false;
      }
      for (uint64_t off = 0; off < size;) {
        uint64_t len = 1 + static_cast<uint8_t>(b[off]);
        if (off + len > size) {
          error = "record cut off at " + std::to_string(off);
          return false;
        }
        out.push_back({off, len});
        off += len;
      }
      return true;
    };
  }
};

std::string recordsOf(std::initializer_list<uint8_t> lengths) {
  std::string s;
  for (uint8_t n : lengths) {
    s.push_back(static_cast<char>(n));
    s.append(n, 'x');
  }
  return s;
}

void writeFile(const std::string &path, const std::string &content) { std::ofstream(path, std::ios::binary) << content; }

TEST(RecordIndex, ScannedOnceThenReadFromTheCache) {
  TempDir dir;
  std::string path = dir.path + "/shard.dat";
  writeFile(path, recordsOf({3, 0, 200, 7}));
  LengthPrefixed fmt;
  RecordIndex a, b;
  std::string error;
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), a, error)) << error;
  EXPECT_EQ(a.source(), RecordIndex::Source::Scanned);
  EXPECT_EQ(RecordIndex::cachePath(path), dir.path + "/.shard.dat.ridx");
  EXPECT_TRUE(std::filesystem::exists(RecordIndex::cachePath(path)));
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), b, error)) << error;
  EXPECT_EQ(b.source(), RecordIndex::Source::Cache);
  EXPECT_EQ(fmt.scans, 1);
  ASSERT_EQ(b.records().size(), 4u);
  EXPECT_EQ(b.records()[2].offset, 5u);
  EXPECT_EQ(b.records()[2].length, 201u);
  EXPECT_EQ(b.records()[3].end(), 214u);
  EXPECT_EQ(b.firstEndingAfter(0), 0u);
  EXPECT_EQ(b.firstEndingAfter(4), 1u);
  EXPECT_EQ(b.firstEndingAfter(5), 2u);
  EXPECT_EQ(b.firstEndingAfter(214), 4u);
  EXPECT_TRUE(b.startsRecord(206));
  EXPECT_FALSE(b.startsRecord(207));
}

TEST(RecordIndex, RebuiltWhenTheFileChanges) {
  TempDir dir;
  std::string path = dir.path + "/shard.dat";
  writeFile(path, recordsOf({3, 4}));
  LengthPrefixed fmt;
  RecordIndex idx;
  std::string error;
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  // Another size.
  writeFile(path, recordsOf({3, 4, 5}));
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  EXPECT_EQ(idx.source(), RecordIndex::Source::Scanned);
  EXPECT_EQ(idx.records().size(), 3u);
  // The same size, other records, another mtime.
  writeFile(path, recordsOf({1, 1, 11}));
  timespec times[2] = {{0, UTIME_OMIT}, {1234567, 890}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  EXPECT_EQ(idx.source(), RecordIndex::Source::Scanned);
  ASSERT_EQ(idx.records().size(), 3u);
  EXPECT_EQ(idx.records()[2].length, 12u);
  EXPECT_EQ(fmt.scans, 3);
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  EXPECT_EQ(idx.source(), RecordIndex::Source::Cache);
}

TEST(RecordIndex, ACorruptOrTruncatedCacheIsNeverTrusted) {
  TempDir dir;
  std::string path = dir.path + "/shard.dat";
  writeFile(path, recordsOf({3, 4, 9, 1}));
  LengthPrefixed fmt;
  RecordIndex idx;
  std::string error;
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  std::string cache = RecordIndex::cachePath(path);
  auto size = std::filesystem::file_size(cache);
  for (uint64_t at : {uint64_t{0}, uint64_t{12}, uint64_t{40}, size - 1}) { // magic, header, a record, the hash
    std::fstream f(cache, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x5a));
    f.close();
    ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
    EXPECT_EQ(idx.source(), RecordIndex::Source::Scanned) << "byte " << at;
    EXPECT_EQ(idx.records().size(), 4u);
  }
  std::filesystem::resize_file(cache, size - 20);
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  EXPECT_EQ(idx.source(), RecordIndex::Source::Scanned);
  writeFile(cache, "");
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  EXPECT_EQ(idx.source(), RecordIndex::Source::Scanned);
  ASSERT_TRUE(RecordIndex::load(path, fmt.scanner(), idx, error)) << error;
  EXPECT_EQ(idx.source(), RecordIndex::Source::Cache); // rewritten whole
  EXPECT_EQ(fmt.scans, 7);
}

TEST(RecordIndex, RefusedFilesAndScannersThatOverlap) {
  TempDir dir;
  std::string path = dir.path + "/shard.dat";
  writeFile(path, recordsOf({3}) + std::string(1, '\x09'));
  LengthPrefixed fmt;
  RecordIndex idx;
  std::string error;
  EXPECT_FALSE(RecordIndex::load(path, fmt.scanner(), idx, error));
  EXPECT_NE(error.find("record cut off at 4"), std::string::npos) << error;
  EXPECT_FALSE(RecordIndex::load(dir.path + "/missing", fmt.scanner(), idx, error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  auto overlapping = [](int, uint64_t, std::vector<RecordSpan> &out, std::string &) {
    out = {{0, 3}, {2, 2}};
    return true;
  };
  EXPECT_FALSE(RecordIndex::load(path, overlapping, idx, error));
  EXPECT_NE(error.find("overlap"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(RecordIndex::cachePath(path)));
}

} // namespace
