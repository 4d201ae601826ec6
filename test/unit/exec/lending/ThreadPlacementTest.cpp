// The observer the lending guarantee is checked with: a tree found by parent pids, its threads read
// from /proc, and which of them could run on given CPUs (queued there, or runnable and allowed there).
#include "executor/lending/ThreadPlacement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace msc::exec::lending {
namespace {

TEST(ThreadPlacement, ARunnableThreadCountsWhereItIsQueuedOrAllowed) {
  std::vector<ThreadSeen> seen = {
      {1, 1, 'R', 3, {3}},       // queued on 3
      {1, 2, 'R', 0, {0, 5}},    // on 0, allowed on 5
      {1, 3, 'S', 5, {5}},       // asleep: cannot run
      {1, 4, 'T', 5, {5}},       // stopped or frozen
  };
  EXPECT_EQ(runnableOn(seen, {5}).size(), 1u);
  EXPECT_EQ(runnableOn(seen, {5})[0].tid, 2);
  EXPECT_EQ(runnableOn(seen, {3, 5}).size(), 2u);
  EXPECT_TRUE(runnableOn(seen, {1, 2}).empty());
}

TEST(ThreadPlacement, ATreeIsFoundByParentPids) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) { // a grandchild, so the tree has depth
      ::close(ready[0]);
      ::write(ready[1], "x", 1);
      ::pause();
      ::_exit(0);
    }
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  std::vector<pid_t> tree = processTree(child);
  std::vector<ThreadSeen> threads = threadsOf(tree);
  for (pid_t p : tree)
    ::kill(p, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_EQ(tree.size(), 2u);
  EXPECT_EQ(tree[0], child);
  EXPECT_EQ(threads.size(), 2u);
  for (const ThreadSeen &t : threads) {
    EXPECT_GE(t.cpu, 0);
    EXPECT_FALSE(t.allowed.empty());
  }
  EXPECT_TRUE(processTree(999'999'999).empty());
}

} // namespace
} // namespace msc::exec::lending
