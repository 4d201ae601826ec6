// The node's one ledger (executor/claims/NodeClaims.h): claims made under the lock are seen by the
// next reader, a claim whose holder is gone is dropped, and a process drops only its own claims.
#include "executor/claims/NodeClaims.h"
#include "plan/PlanFile.h"
#include "test/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace msc::exec {
namespace {

plan::Plan planOf(const std::string &contract) {
  plan::Plan p;
  p.set_format_major(plan::kFormatMajor);
  p.mutable_provenance()->set_contract(contract);
  p.mutable_provenance()->set_profile("mlvm_light");
  return p;
}

TEST(NodeClaims, AClaimIsSeenByTheNextReaderAndDroppedWhenItsHolderIsGone) {
  test::TempDir dir("msc-claims");
  std::string error;
  {
    std::optional<NodeClaims> ledger = NodeClaims::lock(dir.path + "/claims", error);
    ASSERT_TRUE(ledger) << error;
    ASSERT_TRUE(ledger->claim(planOf("mine"), "mscale-exec run", error)) << error;
  }
  // A claim of a process that has ended since (a killed run): the next reader drops it.
  pid_t child = ::fork();
  if (child == 0) {
    std::string e;
    std::optional<NodeClaims> l = NodeClaims::lock(dir.path + "/claims", e);
    ::_exit(l && l->claim(planOf("gone"), "mscale-exec run", e) ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(NodeClaims::look(dir.path + "/claims").size(), 1u) << "a reader for people does not see the stale claim";

  std::optional<NodeClaims> ledger = NodeClaims::lock(dir.path + "/claims", error);
  ASSERT_TRUE(ledger) << error;
  std::vector<std::string> dropped;
  std::vector<NodeClaim> claims = ledger->read(dropped);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].contract, "mine");
  EXPECT_EQ(claims[0].pid, ::getpid());
  EXPECT_EQ(claims[0].holder, "mscale-exec run");
  EXPECT_EQ(claims[0].plan.provenance().profile(), "mlvm_light");
  EXPECT_EQ(claims[0].describe(), "contract 'mine' (mscale-exec run, pid " + std::to_string(::getpid()) + ")");
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped[0].find("dropped the stale claim of contract 'gone': its holder (mscale-exec run, pid " +
                            std::to_string(child) + ") is gone"),
            std::string::npos)
      << dropped[0];
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/claims/gone.holder"));

  ledger->release("mine");
  EXPECT_TRUE(ledger->read(dropped).empty());
}

TEST(NodeClaims, TheLockIsTheNodesOneAndAProcessDropsOnlyItsOwnClaims) {
  test::TempDir dir("msc-claims");
  std::string error;
  // The other process is forked before the lock is taken: a child that inherited the lock's
  // descriptor would hold it too (flock belongs to the open file).
  int go[2], locked[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(locked), 0);
  pid_t child = ::fork();
  if (child == 0) {
    char c;
    (void)!::read(go[0], &c, 1);
    std::string e;
    std::optional<NodeClaims> l = NodeClaims::lock(dir.path, e);
    (void)!::write(locked[1], &c, 1);
    // Its own claim, then a release of mine that must leave it.
    bool ok = l && l->claim(planOf("theirs"), "mscale-exec run", e);
    if (l)
      l->release("mine");
    ::_exit(ok ? 0 : 1);
  }
  std::optional<NodeClaims> held = NodeClaims::lock(dir.path, error);
  ASSERT_TRUE(held) << error;
  char c = 1;
  ASSERT_EQ(::write(go[1], &c, 1), 1);
  pollfd p{locked[0], POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 200), 0) << "the other process got the lock while it was held";
  ASSERT_TRUE(held->claim(planOf("mine"), "mscale-exec serve", error)) << error;
  held.reset();
  EXPECT_EQ(::poll(&p, 1, 5000), 1) << "the lock, released, goes to the one waiting";
  int status = 0;
  ::waitpid(child, &status, 0);
  for (int fd : {go[0], go[1], locked[0], locked[1]})
    ::close(fd);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/mine.holder")) << "another process's release leaves my claim";
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/theirs.holder")) << "the claim of a process that ended stays until read";
}

TEST(NodeClaims, ALedgerThatCannotBeMadeIsSaid) {
  test::TempDir dir("msc-claims");
  std::string file = dir.write("file", "");
  std::string error;
  EXPECT_FALSE(NodeClaims::lock(file + "/claims", error));
  EXPECT_NE(error.find("cannot make"), std::string::npos) << error;
  ::setenv("MSCALE_CLAIMS_DIR", "/elsewhere", 1);
  EXPECT_EQ(NodeClaims::dirFor("/configured"), "/configured") << "the node config wins";
  EXPECT_EQ(NodeClaims::dirFor(""), "/elsewhere");
  ::unsetenv("MSCALE_CLAIMS_DIR");
  EXPECT_EQ(NodeClaims::dirFor(""), "/run/mscale/claims");
  EXPECT_FALSE(NodeClaims::used(/*simulatedHost=*/true, ""));
  EXPECT_TRUE(NodeClaims::used(true, "/mine"));
  EXPECT_TRUE(NodeClaims::used(false, ""));
}

} // namespace
} // namespace msc::exec
