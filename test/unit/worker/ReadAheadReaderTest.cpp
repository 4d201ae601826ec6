// ReadAheadReader: reads served from the read-ahead window (hits) and by pread (misses) give the file's
// bytes exactly, whatever the access pattern: records inside a block and across two, reads at and past
// the end of the file, files shorter than a block, a first read at an arbitrary record (resume), records
// with gaps between them that the index lets the window skip, a read the kernel fails.
#include "worker/ReadAheadReader.h"

#include "test/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace msc::worker;

namespace {

constexpr size_t kBlock = 8192;

using msc::test::pattern;

// A private directory per test (test/unit/TestFiles.h).
struct TempDir : msc::test::TempDir {
  TempDir() : msc::test::TempDir("msc-readahead") {}
};

// The window's own behaviour: these files were just written, so the page cache holds them all and
// pageCacheFirst would serve every large read (its own test is below).
std::unique_ptr<ReadAheadReader> makeReader(unsigned depth = 4, bool pageCacheFirst = false) {
  ReadAheadReader::Options o;
  o.depth = depth;
  o.blockSize = kBlock;
  o.pageCacheFirst = pageCacheFirst;
  std::string error;
  auto r = ReadAheadReader::create(o, error);
  EXPECT_TRUE(r) << error;
  return r;
}

// Records of lengths cycling through `lengths`, back to back from offset 0, covering `size` bytes.
std::vector<RecordSpan> records(uint64_t size, const std::vector<uint64_t> &lengths) {
  std::vector<RecordSpan> out;
  for (uint64_t off = 0, i = 0; off < size; ++i) {
    uint64_t len = std::min(lengths[i % lengths.size()], size - off);
    out.push_back({off, len});
    off += len;
  }
  return out;
}

RecordIndex::Scanner fixedScanner(std::vector<RecordSpan> spans) {
  return [spans](int, uint64_t, std::vector<RecordSpan> &out, std::string &) {
    out = spans;
    return true;
  };
}

// Reads every span in order and checks each against the file's content.
void readAll(ReadAheadReader &r, const std::string &path, const std::string &content,
             const std::vector<RecordSpan> &spans) {
  for (const RecordSpan &s : spans) {
    std::string buf(s.length, '\0');
    ASSERT_EQ(r.readAt(path, s.offset, buf.data(), buf.size()), static_cast<int64_t>(s.length)) << s.offset;
    ASSERT_EQ(buf, content.substr(s.offset, s.length)) << "record at " << s.offset;
  }
}

TEST(ReadAheadReader, SequentialRecordsAreServedFromTheWindow) {
  TempDir dir;
  std::string content = pattern(20 * kBlock + 123, 1);
  std::string path = dir.write("f", content);
  auto r = makeReader();
  // 300-byte records: many inside a block, some across two.
  readAll(*r, path, content, records(content.size(), {300, 77, 4100}));
  EXPECT_EQ(r->stats().misses, 1u); // the first read: nothing says it is the start of a sequence
  EXPECT_EQ(r->stats().windowStarts, 1u);
  EXPECT_GT(r->stats().hits, 100u);
  EXPECT_EQ(r->stats().blocksRead, 21u); // each block once
  EXPECT_TRUE(r->buffersRegistered() || ::geteuid() != 0);
}

TEST(ReadAheadReader, ARecordSpanningTwoBlocksAndOneLargerThanTheWindow) {
  TempDir dir;
  std::string content = pattern(12 * kBlock, 2);
  std::string path = dir.write("f", content);
  auto r = makeReader(2);
  RecordIndex idx;
  std::vector<RecordSpan> spans = {{0, kBlock - 10}, {kBlock - 10, 20}, {kBlock + 10, 5 * kBlock}, {6 * kBlock + 10, 100}};
  std::string error;
  ASSERT_TRUE(RecordIndex::load(path, fixedScanner(spans), idx, error)) << error;
  r->setIndex(path, std::move(idx));
  readAll(*r, path, content, spans);
  EXPECT_EQ(r->stats().misses, 0u);
  EXPECT_EQ(r->stats().hits, spans.size());
}

TEST(ReadAheadReader, EndOfFileAndAShortFile) {
  TempDir dir;
  std::string content = pattern(3 * kBlock + 500, 3);
  std::string path = dir.write("f", content);
  std::string small = dir.write("small", "0123456789");
  auto r = makeReader();
  char buf[1000];
  ASSERT_EQ(r->readAt(path, 3 * kBlock - 600, buf, 600), 600);
  ASSERT_EQ(r->readAt(path, 3 * kBlock, buf, sizeof buf), 500); // short only at the end, from the window
  EXPECT_EQ(std::string(buf, 500), content.substr(3 * kBlock));
  EXPECT_EQ(r->readAt(path, 3 * kBlock + 500, buf, sizeof buf), 0);
  EXPECT_EQ(r->readAt(path, 10 * kBlock, buf, sizeof buf), 0);
  EXPECT_EQ(r->stats().hits, 1u);
  EXPECT_EQ(r->stats().misses, 1u);
  EXPECT_EQ(r->stats().pastEnd, 2u);

  ASSERT_EQ(r->readAt(small, 0, buf, 4), 4);
  ASSERT_EQ(r->readAt(small, 4, buf, sizeof buf), 6);
  EXPECT_EQ(std::string(buf, 6), "456789");
  EXPECT_EQ(r->readAt(small, 10, buf, sizeof buf), 0);
  EXPECT_EQ(r->readAt(small, 3, buf, 0), 0);
}

TEST(ReadAheadReader, RandomReadsMissAndStayExact) {
  TempDir dir;
  std::string content = pattern(64 * kBlock, 4);
  std::string path = dir.write("f", content);
  auto r = makeReader();
  std::mt19937_64 rng(7);
  std::string buf(4096, '\0');
  for (int i = 0; i < 200; ++i) {
    uint64_t off = rng() % content.size();
    int64_t got = r->readAt(path, off, buf.data(), buf.size());
    ASSERT_EQ(got, static_cast<int64_t>(std::min<uint64_t>(buf.size(), content.size() - off)));
    ASSERT_EQ(buf.substr(0, static_cast<size_t>(got)), content.substr(off, static_cast<size_t>(got)));
  }
  EXPECT_GT(r->stats().misses, 190u); // a random offset rarely lands just past the previous read
  // A window started by a read that only looked sequential reads two blocks, not the whole depth.
  EXPECT_LE(r->stats().blocksRead, 2 * r->stats().windowStarts);
  std::string rec(100, '\0');
  ASSERT_EQ(r->readAt(path, 1000, rec.data(), rec.size()), 100);
  ASSERT_EQ(r->readAt(path, 1100, rec.data(), rec.size()), 100);
  uint64_t before = r->stats().blocksRead;
  ASSERT_EQ(r->readAt(path, 40 * kBlock, rec.data(), rec.size()), 100);
  EXPECT_EQ(before, 2 * r->stats().windowStarts);
}

TEST(ReadAheadReader, SequentialThenAJumpBackThenSequentialAgain) {
  TempDir dir;
  std::string content = pattern(16 * kBlock, 5);
  std::string path = dir.write("f", content);
  auto r = makeReader();
  std::vector<RecordSpan> spans = records(content.size(), {1000});
  readAll(*r, path, content, std::vector<RecordSpan>(spans.begin(), spans.begin() + 60));
  readAll(*r, path, content, std::vector<RecordSpan>(spans.begin() + 3, spans.begin() + 40)); // a rewind
  readAll(*r, path, content, std::vector<RecordSpan>(spans.begin() + 100, spans.end())); // a skip ahead
  EXPECT_EQ(r->stats().misses, 3u);
  EXPECT_EQ(r->stats().windowStarts, 3u);
}

TEST(ReadAheadReader, ResumeAtAnArbitraryRecordStartsTheWindowAtOnce) {
  TempDir dir;
  std::string content = pattern(30 * kBlock + 77, 6);
  std::string path = dir.write("f", content);
  std::vector<RecordSpan> spans = records(content.size(), {333, 1500, 90});
  for (size_t from : {size_t{0}, size_t{1}, spans.size() / 2, spans.size() - 1}) {
    auto r = makeReader();
    r->setScanner(fixedScanner(spans));
    readAll(*r, path, content, std::vector<RecordSpan>(spans.begin() + static_cast<long>(from), spans.end()));
    EXPECT_EQ(r->stats().misses, 0u) << from;
    ASSERT_NE(r->index(path), nullptr);
  }
}

TEST(ReadAheadReader, TheIndexLetsTheWindowSkipGapsBetweenRecords) {
  TempDir dir;
  std::string content = pattern(40 * kBlock, 7);
  std::string path = dir.write("f", content);
  // One 500-byte record every fourth block (and one across a block boundary).
  std::vector<RecordSpan> spans;
  for (uint64_t b = 0; b < 40; b += 4)
    spans.push_back({b * kBlock + 100, 500});
  spans.push_back({37 * kBlock - 50, 100});
  std::sort(spans.begin(), spans.end(), [](auto &a, auto &b) { return a.offset < b.offset; });
  auto r = makeReader();
  r->setScanner(fixedScanner(spans));
  readAll(*r, path, content, spans);
  EXPECT_EQ(r->stats().misses, 0u);
  EXPECT_LE(r->stats().blocksRead, 12u); // the blocks holding records, not all 40
}

// Every switch abandons a window whose reads may still be in flight; the next window still gets blocks
// (it waits for abandoned reads to give their buffers back rather than falling back to pread).
TEST(ReadAheadReader, WindowsAbandonedInFlightGiveTheirBuffersBack) {
  TempDir dir;
  std::string a = pattern(16 * kBlock, 10), b = pattern(16 * kBlock, 11);
  std::string pa = dir.write("a", a), pb = dir.write("b", b);
  std::vector<RecordSpan> spans = records(a.size(), {3000});
  auto r = makeReader(2);
  r->setScanner(fixedScanner(spans));
  uint64_t reads = 0;
  for (size_t i = 0; i + 1 < spans.size(); i += 2, reads += 2) {
    readAll(*r, pa, a, {spans[i]});
    readAll(*r, pb, b, {spans[i + 1]});
  }
  EXPECT_EQ(r->stats().misses, 0u);
  EXPECT_EQ(r->stats().windowStarts, reads);
  EXPECT_GE(r->stats().blocksRead, r->stats().windowStarts);
}

// Large reads the window does not hold come from the page cache first; what the cache lacks (dropped
// here with POSIX_FADV_DONTNEED after an fsync) goes through the window. Small reads never try.
TEST(ReadAheadReader, PageCacheFirstForLargeReads) {
  TempDir dir;
  std::string content = pattern(32 * kBlock, 12);
  std::string path = dir.write("f", content);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fsync(fd), 0);
  ::posix_fadvise(fd, 16 * kBlock, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  auto r = makeReader(4, true);
  std::vector<RecordSpan> large = records(content.size(), {kBlock / 2 + 7});
  readAll(*r, path, content, large);
  EXPECT_GT(r->stats().cached, 0u);
  EXPECT_EQ(r->stats().cached + r->stats().hits + r->stats().misses, large.size());
  auto small = makeReader(4, true);
  readAll(*small, path, content, records(content.size(), {kBlock / 16 - 1}));
  EXPECT_EQ(small->stats().cached, 0u);
}

TEST(ReadAheadReader, FilesInTurnAndErrors) {
  TempDir dir;
  std::string a = pattern(5 * kBlock, 8), b = pattern(3 * kBlock + 9, 9);
  std::string pa = dir.write("a", a), pb = dir.write("b", b);
  auto r = makeReader();
  readAll(*r, pa, a, records(a.size(), {700}));
  readAll(*r, pb, b, records(b.size(), {700}));
  readAll(*r, pa, a, records(a.size(), {4000}));
  char buf[16];
  EXPECT_EQ(r->readAt(dir.path + "/missing", 0, buf, sizeof buf), -ENOENT);
  // EIO from the kernel (an unmapped address of our own memory) reaches the caller.
  EXPECT_EQ(r->readAt("/proc/self/mem", 0, buf, sizeof buf), -EIO);
  ReadAheadReader::Options bad;
  bad.blockSize = 1000;
  std::string error;
  EXPECT_EQ(ReadAheadReader::create(bad, error), nullptr);
  EXPECT_NE(error.find("multiple of 4 KiB"), std::string::npos);
}

} // namespace
