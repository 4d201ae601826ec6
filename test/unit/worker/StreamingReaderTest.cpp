// IoUringReader's streaming mode over the shared io_uring queue: every byte once and in order per file
// whatever the mode (page cache read inline first or all through the ring, O_DIRECT, IOSQE_ASYNC), files of awkward sizes, resume offsets that
// are not block or page aligned, and the error paths (a read the kernel fails, a file that ends early).
#include "worker/IoUringReader.h"

#include "test/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace msc::worker;

namespace {

using msc::test::pattern;

// A private directory per test (test/unit/TestFiles.h).
struct TempDir : msc::test::TempDir {
  TempDir() : msc::test::TempDir("msc-streaming") {}
};

// What readFiles delivered, per file, with a check that each block starts where the last one ended.
struct Collected {
  std::vector<std::string> data;
  std::vector<uint64_t> next;
  bool inOrder = true;
  explicit Collected(size_t files, const std::vector<uint64_t> &starts = {}) : data(files), next(files) {
    for (size_t i = 0; i < starts.size(); ++i)
      next[i] = starts[i];
  }
  IoUringReader::Consumer consumer() {
    return [this](size_t f, uint64_t off, std::string_view d) {
      inOrder = inOrder && off == next[f] && !d.empty();
      next[f] = off + d.size();
      data[f].append(d);
    };
  }
};

class StreamingModes : public ::testing::TestWithParam<IoUringReader::Streaming> {};

TEST_P(StreamingModes, EveryByteOnceInOrderForFilesOfAwkwardSizes) {
  TempDir dir;
  const size_t block = 8192;
  std::vector<size_t> sizes = {0, 1, 4095, 4096, 4097, block, block + 1, 3 * block + 17, 40 * block};
  for (size_t i = 0; i < 60; ++i) // many small files, so that several are in flight at once
    sizes.push_back(100 + i * 97);
  std::vector<std::string> paths, contents;
  for (size_t i = 0; i < sizes.size(); ++i) {
    contents.push_back(pattern(sizes[i], static_cast<unsigned>(i)));
    paths.push_back(dir.write("f" + std::to_string(i), contents.back()));
  }
  std::string error;
  auto reader = IoUringReader::create(8, block, error);
  ASSERT_TRUE(reader) << error;
  reader->setStreaming(GetParam());
  for (int run = 0; run < 2; ++run) { // the buffers are kept and reused by the second call
    Collected got(paths.size());
    ASSERT_TRUE(reader->readFiles(paths, got.consumer(), error)) << error;
    EXPECT_TRUE(got.inOrder);
    for (size_t i = 0; i < paths.size(); ++i) {
      EXPECT_EQ(got.data[i], contents[i]) << paths[i];
      EXPECT_EQ(reader->offsets()[i].offset, sizes[i]);
      EXPECT_EQ(reader->offsets()[i].size, sizes[i]);
      EXPECT_TRUE(reader->offsets()[i].done);
    }
  }
  if (GetParam().direct || !GetParam().pageCacheFirst) { // cached blocks are read inline, not queued
    EXPECT_EQ(reader->maxInFlight(), 8u);
  }
}

TEST_P(StreamingModes, ResumesAtOffsetsThatAreNotAligned) {
  TempDir dir;
  std::string a = pattern(100000, 1), b = pattern(5000, 2), c = pattern(7, 3);
  std::vector<std::string> paths = {dir.write("a", a), dir.write("b", b), dir.write("c", c)};
  std::string error;
  auto reader = IoUringReader::create(4, 16384, error);
  ASSERT_TRUE(reader) << error;
  reader->setStreaming(GetParam());
  reader->setStartOffset(paths[0], 12345);
  reader->setStartOffset(paths[1], 4096);
  reader->setStartOffset(paths[2], 99); // past the end: nothing is left
  Collected got(3, {12345, 4096, 7});
  ASSERT_TRUE(reader->readFiles(paths, got.consumer(), error)) << error;
  EXPECT_TRUE(got.inOrder);
  EXPECT_EQ(got.data[0], a.substr(12345));
  EXPECT_EQ(got.data[1], b.substr(4096));
  EXPECT_EQ(got.data[2], "");
  EXPECT_EQ(reader->offsets()[2].offset, 7u);
  EXPECT_TRUE(reader->offsets()[2].done);
}

INSTANTIATE_TEST_SUITE_P(Reader, StreamingModes,
                         ::testing::Values(IoUringReader::Streaming{false, false, true},
                                           IoUringReader::Streaming{false, false, false},
                                           IoUringReader::Streaming{true, false, true},
                                           IoUringReader::Streaming{false, true, false}),
                         [](const auto &info) {
                           return std::string(info.param.direct ? "Direct" : "PageCache") +
                                  (info.param.asyncBuffered ? "Async" : "") +
                                  (info.param.pageCacheFirst && !info.param.direct ? "CachedFirst" : "RingOnly");
                         });

// A read the kernel fails (a directory opens, has a size, and fails every read with EISDIR) stops the
// reader with the file and offset named; the files before it were delivered whole.
TEST(StreamingReader, AFailedReadNamesTheFileAndOffsetAndKeepsWhatWasDelivered) {
  TempDir dir;
  std::string a = pattern(20000, 4);
  std::string sub = dir.path + "/sub";
  std::filesystem::create_directory(sub);
  std::vector<std::string> paths = {dir.write("a", a), sub};
  std::string error;
  auto reader = IoUringReader::create(4, 4096, error);
  ASSERT_TRUE(reader) << error;
  Collected got(2);
  EXPECT_FALSE(reader->readFiles(paths, got.consumer(), error));
  EXPECT_NE(error.find("read of '" + sub + "' at offset 0: "), std::string::npos) << error;
  EXPECT_EQ(got.data[0], a);
  EXPECT_EQ(reader->offsets()[0].offset, a.size());
  EXPECT_EQ(reader->offsets()[1].offset, 0u);
  EXPECT_FALSE(reader->offsets()[1].done);
  // The reader is usable afterwards.
  Collected again(1);
  ASSERT_TRUE(reader->readFiles({paths[0]}, again.consumer(), error)) << error;
  EXPECT_EQ(again.data[0], a);
}

// A file cut short while it is read (its size was taken at open) is an error, not a silent short file.
TEST(StreamingReader, AFileThatEndsBeforeItsSizeIsAnError) {
  TempDir dir;
  std::string a = pattern(3 * 4096, 5);
  std::string path = dir.write("a", a);
  std::string error;
  auto reader = IoUringReader::create(1, 4096, error); // one block in flight: the next is read after this one
  ASSERT_TRUE(reader) << error;
  Collected got(1);
  auto consume = got.consumer();
  EXPECT_FALSE(reader->readFiles(
      {path},
      [&](size_t f, uint64_t off, std::string_view d) {
        consume(f, off, d);
        if (off == 0) {
          ASSERT_EQ(::truncate(path.c_str(), 4096), 0);
        }
      },
      error));
  EXPECT_NE(error.find("at offset 4096: the file ended before its size, 12288 bytes"), std::string::npos) << error;
  EXPECT_EQ(got.data[0], a.substr(0, 4096));
  EXPECT_EQ(reader->offsets()[0].offset, 4096u);
}

// EIO from the kernel reaches readAt's caller as -EIO (reading an unmapped address of our own memory).
TEST(StreamingReader, ReadAtPassesEioThrough) {
  std::string error;
  auto reader = IoUringReader::create(2, 4096, error);
  ASSERT_TRUE(reader) << error;
  char buf[64];
  EXPECT_EQ(reader->readAt("/proc/self/mem", 0, buf, sizeof buf), -EIO);
}

} // namespace
