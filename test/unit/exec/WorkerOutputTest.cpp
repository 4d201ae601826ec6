// What a worker prints, kept per rank and attempt by the agent (executor/WorkerOutput.h): real pipes
// written by the test as a worker would, bounded files, the newest attempts kept, the last line.
#include "executor/WorkerOutput.h"
#include "test/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace msc::exec {
namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


void put(int fd, const std::string &text) { ASSERT_EQ(::write(fd, text.data(), text.size()), ssize_t(text.size())); }

TEST(WorkerOutput, KeepsEachWorkersOutputAndItsLastLine) {
  test::TempDir dir("msc-output");
  std::string error;
  auto out = WorkerOutput::create(dir.path + "/logs/c", {}, error);
  ASSERT_TRUE(out) << error;
  int fd = out->open(0, 0, false, error);
  ASSERT_GE(fd, 0) << error;
  put(fd, "loading shard 3\n");
  put(fd, "error: shard 3 is corrupt\n\n");
  // The worker exited: what its pipe still holds is read before the line is given.
  EXPECT_EQ(out->lastLine(0), "error: shard 3 is corrupt");
  put(fd, "Traceback (most recent call last):\n  raise ValueError('bad')\nValueError: bad"); // no newline at the end
  ::close(fd);
  EXPECT_EQ(out->lastLine(0), "ValueError: bad");
  EXPECT_EQ(out->lastLine(1), "") << "a rank that wrote nothing";
  out.reset(); // drains and stops the pump
  EXPECT_EQ(readFile(dir.path + "/logs/c/rank0.attempt0.log"),
            "loading shard 3\nerror: shard 3 is corrupt\n\nTraceback (most recent call last):\n  raise ValueError('bad')\n"
            "ValueError: bad");
}

TEST(WorkerOutput, FilesAreBoundedAndOnlyTheNewestAttemptsKept) {
  test::TempDir dir("msc-output");
  std::string error;
  auto out = WorkerOutput::create(dir.path, {/*maxFileBytes=*/64, /*attemptsKept=*/2}, error);
  ASSERT_TRUE(out) << error;
  for (uint32_t attempt = 0; attempt < 3; ++attempt) {
    int fd = out->open(1, attempt, false, error);
    ASSERT_GE(fd, 0) << error;
    for (int i = 0; i < 10; ++i)
      put(fd, "attempt " + std::to_string(attempt) + " line " + std::to_string(i) + "\n");
    ::close(fd);
    EXPECT_EQ(out->lastLine(1), "attempt " + std::to_string(attempt) + " line 9");
  }
  int standby = out->open(1, 3, true, error);
  ASSERT_GE(standby, 0) << error;
  put(standby, "standing by\n");
  ::close(standby);
  EXPECT_EQ(out->lastLine(1), "attempt 2 line 9") << "a standby's output is not the worker's";
  out.reset();
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/rank1.attempt0.log")) << "the oldest attempt went";
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/rank1.attempt1.log"));
  std::string newest = readFile(dir.path + "/rank1.attempt2.log"), older = readFile(dir.path + "/rank1.attempt2.log.1");
  EXPECT_LE(newest.size(), 64u) << "bounded";
  EXPECT_FALSE(older.empty()) << "the older piece is kept as .1";
  EXPECT_NE(newest.find("attempt 2 line 9\n"), std::string::npos) << newest;
  EXPECT_EQ(readFile(dir.path + "/rank1.standby.attempt3.log"), "standing by\n");
}

TEST(WorkerOutput, ADirectoryThatCannotBeMadeIsSaid) {
  std::string error;
  EXPECT_FALSE(WorkerOutput::create("/proc/self/no/such/dir", {}, error));
  EXPECT_NE(error.find("cannot make"), std::string::npos) << error;
}

} // namespace
} // namespace msc::exec
