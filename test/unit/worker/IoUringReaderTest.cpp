#include "worker/IoUringReader.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <unistd.h>

using namespace msc::worker;

namespace {

std::string tempDir() {
  char tmpl[] = "/tmp/msc-ioreader-XXXXXX";
  return mkdtemp(tmpl);
}

std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return s;
}

} // namespace

TEST(IoUringReader, ReadsFilesInOrderAtDepthAndReportsOffsets) {
  std::string dir = tempDir();
  std::vector<std::string> paths;
  std::vector<std::string> contents;
  for (unsigned i = 0; i < 5; ++i) {
    paths.push_back(dir + "/f" + std::to_string(i));
    contents.push_back(pattern(i == 2 ? 0 : 10000 + i * 70001, i));
    std::ofstream(paths.back(), std::ios::binary) << contents.back();
  }
  std::string error;
  auto reader = IoUringReader::create(8, 4096, error);
  ASSERT_TRUE(reader) << error;
  std::vector<std::string> got(paths.size());
  ASSERT_TRUE(reader->readFiles(paths, [&](size_t f, uint64_t off, std::string_view data) {
    ASSERT_EQ(off, got[f].size()); // in order within each file
    got[f].append(data.data(), data.size());
  }, error)) << error;
  for (size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(got[i], contents[i]) << paths[i];
    EXPECT_EQ(reader->offsets()[i].offset, contents[i].size());
    EXPECT_TRUE(reader->offsets()[i].done);
  }
  EXPECT_EQ(reader->depth(), 8u);
  EXPECT_EQ(reader->maxInFlight(), 8u); // the queue was filled to the plan's depth
  EXPECT_LE(reader->maxInFlight(), reader->depth());
  ASSERT_TRUE(reader->writeOffsets(dir + "/offsets", error)) << error;
  std::ifstream in(dir + "/offsets");
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "10000\t10000\t" + paths[0]);
  std::system(("rm -rf " + dir).c_str());
}

TEST(IoUringReader, ResumesAtAStartOffset) {
  std::string dir = tempDir();
  std::string path = dir + "/data", content = pattern(100000, 3);
  std::ofstream(path, std::ios::binary) << content;
  std::string error;
  auto reader = IoUringReader::create(4, 8192, error);
  ASSERT_TRUE(reader);
  reader->setStartOffset(path, 12345);
  std::string got;
  ASSERT_TRUE(reader->readFiles({path}, [&](size_t, uint64_t off, std::string_view d) {
    EXPECT_EQ(off, 12345 + got.size());
    got.append(d.data(), d.size());
  }, error));
  EXPECT_EQ(got, content.substr(12345));
  EXPECT_EQ(reader->offsets()[0].offset, 100000u);
  std::system(("rm -rf " + dir).c_str());
}

TEST(IoUringReader, MissingFileNamesIt) {
  std::string error;
  auto reader = IoUringReader::create(2, 4096, error);
  ASSERT_TRUE(reader);
  EXPECT_FALSE(reader->readFiles({"/nonexistent/x"}, [](size_t, uint64_t, std::string_view) {}, error));
  EXPECT_NE(error.find("/nonexistent/x"), std::string::npos);
}

TEST(IoUringReader, DepthFromTheExecutorsEnvironment) {
  setenv("MSCALE_ROLE_IMAGE_LOADER_IO_DEPTH", "16", 1);
  std::string error;
  auto reader = IoUringReader::forRole("image-loader", 4, 4096, error);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->depth(), 16u);
  unsetenv("MSCALE_ROLE_IMAGE_LOADER_IO_DEPTH");
}

TEST(IoUringReader, ReadsAtOffsetsLikePread) {
  std::string dir = tempDir();
  std::string path = dir + "/data", content = pattern(50000, 7);
  std::ofstream(path, std::ios::binary) << content;
  std::string error;
  auto reader = IoUringReader::create(2, 4096, error);
  ASSERT_TRUE(reader) << error;
  char buf[1000];
  ASSERT_EQ(reader->readAt(path, 12345, buf, sizeof buf), 1000);
  EXPECT_EQ(std::string(buf, sizeof buf), content.substr(12345, 1000));
  EXPECT_EQ(reader->readAt(path, 49500, buf, sizeof buf), 500); // short only at the end of the file
  EXPECT_EQ(std::string(buf, 500), content.substr(49500));
  EXPECT_EQ(reader->readAt(path, 60000, buf, sizeof buf), 0);
  EXPECT_EQ(reader->readAt(dir + "/missing", 0, buf, sizeof buf), -ENOENT);
  OpenFiles files;
  char plain[1000];
  ASSERT_EQ(preadFully(files.fd(path), 12345, plain, sizeof plain), 1000);
  EXPECT_EQ(std::string(plain, sizeof plain), content.substr(12345, 1000));
  EXPECT_EQ(reader->bytesRead(), 1500u);
  std::system(("rm -rf " + dir).c_str());
}
