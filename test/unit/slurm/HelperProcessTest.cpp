// Running a tool for the SPANK plugin (slurm/HelperProcess.h): what it printed on each stream, its
// exit status, and every way it can fail to get one (not there, killed, too slow), in words the
// plugin puts into ERR_SLURM_004; as root, the drop to the job's user.
#include "slurm/HelperProcess.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace msc::slurm;

namespace {

HelperResult run(std::vector<std::string> argv, unsigned timeout = 10) {
  HelperRun r;
  r.argv = std::move(argv);
  r.timeoutSeconds = timeout;
  return runHelper(r);
}

} // namespace

TEST(HelperProcess, CapturesBothStreamsAndTheExitStatus) {
  HelperResult r = run({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ran) << r.problem;
  EXPECT_EQ(r.exitStatus, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(nonEmptyLines("a\n\nb"), (std::vector<std::string>{"a", "b"}));
}

TEST(HelperProcess, SeesOnlyAMinimalEnvironmentAndNoOtherDescriptors) {
  setenv("MSC_HELPER_TEST_SECRET", "1", 1);
  int inherited = dup(2); // no close-on-exec: slurmstepd's sockets to srun are like this
  ASSERT_GE(inherited, 3);
  HelperResult r = run({"/bin/sh", "-c", "env; echo fds: $(ls /proc/self/fd)"});
  close(inherited);
  ASSERT_TRUE(r.ran && r.exitStatus == 0) << r.problem << r.err;
  EXPECT_EQ(r.out.find("MSC_HELPER_TEST_SECRET"), std::string::npos);
  EXPECT_NE(r.out.find("PATH=/usr/bin:/bin"), std::string::npos);
  EXPECT_NE(r.out.find("fds: 0 1 2 3\n"), std::string::npos) << r.out; // 3: ls's own directory
}

TEST(HelperProcess, AMissingToolIsAProblemNotAnExitStatus) {
  HelperResult r = run({"/nonexistent/mscalec"});
  EXPECT_FALSE(r.ran);
  EXPECT_EQ(r.problem, "No such file or directory");
}

TEST(HelperProcess, AKilledToolSaysBySignal) {
  HelperResult r = run({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_FALSE(r.ran);
  EXPECT_EQ(r.problem, "killed by signal 9");
}

TEST(HelperProcess, ATooSlowToolIsKilledAtTheTimeout) {
  HelperResult r = run({"/bin/sleep", "30"}, 1);
  EXPECT_FALSE(r.ran);
  EXPECT_EQ(r.problem, "timed out after 1 s");
}

TEST(HelperProcess, RunsAsTheJobsUserWhenAsked) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root (setuid)";
  HelperRun r;
  r.argv = {"/usr/bin/id", "-u"};
  r.asUser = true;
  r.uid = 65534;
  r.gid = 65534;
  HelperResult res = runHelper(r);
  ASSERT_TRUE(res.ran && res.exitStatus == 0) << res.problem << res.err;
  EXPECT_EQ(res.out, "65534\n");
}
