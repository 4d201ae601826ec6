// The agent over a real Unix socket, in a child process: allowed and refused peers (SO_PEERCRED),
// oversized / truncated / malformed frames refused with codes while the agent keeps serving, and a
// plan submitted, inspected and released.
#include "ExecTestUtil.h"

#include "executor/agent/Agent.h"
#include "executor/client/AgentClient.h"
#include "executor/host/Sys.h"
#include "plan/PlanFile.h"

#include <csignal>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

using namespace msc;
using namespace msc::exec;
using namespace msc::exec::test;

namespace {

class AgentFixture : public ::testing::Test {
protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "needs root (setuid to 65534, cgroups)";
    char tmpl[] = "/tmp/msc-agent-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ::chmod(dir_.c_str(), 0755); // uid 65534 must reach the socket to be refused by the agent
    socket_ = dir_ + "/agent.sock";
    pid_ = fork();
    if (pid_ == 0) {
      Logger log("agent-test", false);
      AgentOptions o;
      o.socketPath = socket_;
      o.http = "unix:" + dir_ + "/metrics.sock";
      o.config.stateDir = dir_ + "/state";
      o.config.maxFrameBytes = 4096;
      o.appliers.cgroups = CgroupLayout::discover();
      Agent agent(o, log);
      CollectingConsumer sink;
      DiagnosticEngine diags(nullptr, sink);
      static Agent *a = &agent;
      signal(SIGTERM, [](int) { a->stop(); });
      if (!agent.start(diags))
        _exit(3);
      _exit(agent.serve());
    }
    // The socket's path exists from bind(), before listen() and before the SIGTERM handler: the
    // agent is up once a connection is accepted.
    bool up = false;
    for (int i = 0; i < 500 && !up; ++i) {
      up = acceptsConnections();
      if (!up)
        usleep(10000);
    }
    ASSERT_TRUE(up) << "the agent did not accept a connection within 5 s";
  }
  bool acceptsConnections() const {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, socket_.c_str());
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    bool ok = connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
    close(fd);
    return ok;
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st;
      waitpid(pid_, &st, 0);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    if (!dir_.empty())
      std::system(("rm -rf " + dir_).c_str());
  }

  int rawConnect() {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, socket_.c_str());
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    return fd;
  }
  agent::Response readResponse(int fd) {
    std::string payload, io;
    ProtocolError e{};
    EXPECT_TRUE(readFrame(fd, 1 << 20, payload, e, io)) << io << e.message;
    agent::Response r;
    r.ParseFromString(payload);
    return r;
  }
  bool listWorks() {
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    auto c = AgentClient::connect(socket_, diags);
    if (!c)
      return false;
    auto r = c->call(listRequest(), diags);
    return r && r->ok();
  }

  std::string dir_, socket_;
  pid_t pid_ = -1;
};

} // namespace

TEST_F(AgentFixture, SocketIsMode0660) {
  struct stat st;
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_TRUE(listWorks());
}

TEST_F(AgentFixture, UnauthorisedPeerIsRefused) {
  // SO_PEERCRED is taken at connect(), so the child must connect as uid 65534; the 0660 mode would
  // stop it at the file system, so the test opens the socket file to everyone to reach the agent's check.
  ASSERT_EQ(chmod(socket_.c_str(), 0666), 0);
  pid_t child = fork();
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
      _exit(10);
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    auto c = AgentClient::connect(socket_, diags);
    if (!c)
      _exit(11);
    auto r = c->call(listRequest(), diags);
    if (!r || r->ok() || sink.diags.empty())
      _exit(12);
    for (const Diagnostic &d : sink.diags)
      if (d.code == DiagCode::ERR_EXEC_013 && d.message.find("peer uid 65534 gid 65534") != std::string::npos)
        _exit(0);
    _exit(13);
  }
  int st;
  waitpid(child, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_TRUE(listWorks()); // the agent keeps serving
}

TEST_F(AgentFixture, OversizedFrameIsRefusedAndAgentKeepsServing) {
  int fd = rawConnect();
  std::string header("\x00\x00\x10\x00", 4); // 1 MiB announced, limit 4096
  ASSERT_EQ(write(fd, header.data(), 4), 4);
  agent::Response r = readResponse(fd);
  ASSERT_EQ(r.diagnostics_size(), 1);
  EXPECT_EQ(r.diagnostics(0).code(), "ERR_EXEC_010");
  close(fd);
  EXPECT_TRUE(listWorks());
}

TEST_F(AgentFixture, TruncatedFrameIsRefused) {
  int fd = rawConnect();
  std::string partial("\x20\x00\x00\x00" "abc", 7);
  ASSERT_EQ(write(fd, partial.data(), partial.size()), 7);
  shutdown(fd, SHUT_WR);
  agent::Response r = readResponse(fd);
  ASSERT_EQ(r.diagnostics_size(), 1);
  EXPECT_EQ(r.diagnostics(0).code(), "ERR_EXEC_011");
  close(fd);
  EXPECT_TRUE(listWorks());
}

TEST_F(AgentFixture, MalformedMessageIsRefusedAndConnectionStaysUsable) {
  int fd = rawConnect();
  std::string junk("\x03\x00\x00\x00\xff\xff\xff", 7);
  ASSERT_EQ(write(fd, junk.data(), junk.size()), 7);
  agent::Response r = readResponse(fd);
  ASSERT_EQ(r.diagnostics_size(), 1);
  EXPECT_EQ(r.diagnostics(0).code(), "ERR_EXEC_012");
  std::string err;
  ASSERT_TRUE(writeFrame(fd, listRequest(), err));
  EXPECT_TRUE(readResponse(fd).ok());
  close(fd);
}

TEST_F(AgentFixture, RequestFollowedByEndOfStreamIsAnswered) {
  int fd = rawConnect();
  std::string err;
  ASSERT_TRUE(writeFrame(fd, listRequest(), err));
  shutdown(fd, SHUT_WR); // the whole request and the end of the stream may arrive in one read
  EXPECT_TRUE(readResponse(fd).ok());
  close(fd);
}

TEST_F(AgentFixture, SubmitStatusReleaseAndMetrics) {
  std::string contract = "gtest_agent_" + std::to_string(getpid());
  std::string bytes = plan::encodePlan(livePlan(contract, false));
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  auto c = AgentClient::connect(socket_, diags);
  ASSERT_TRUE(c);
  auto r = c->call(submitRequest(bytes, "gtest.msp", {MSC_EXEC_TEST_WORKER, "sleep", "30"}), diags);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->ok()) << (r->diagnostics_size() ? r->diagnostics(0).message() : "");
  EXPECT_EQ(r->status().worker().state(), agent::Worker::RUNNING);
  pid_t worker = r->status().worker().pid();
  std::optional<std::string> status = readFileText("/proc/" + std::to_string(worker) + "/status");
  ASSERT_TRUE(status);
  EXPECT_NE(status->find("Cpus_allowed_list:\t0\n"), std::string::npos);
  EXPECT_TRUE(pathExists(dir_ + "/state/" + contract + ".msp"));

  // The same contract twice is refused by admission.
  auto again = c->call(submitRequest(bytes, "gtest.msp", {}), diags);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->ok());
  EXPECT_EQ(again->diagnostics(0).code(), "ERR_HAL_ADMIT_005");

  auto st = c->call(statusRequest(contract), diags);
  ASSERT_TRUE(st && st->ok());
  EXPECT_EQ(st->status().contract(), contract);
  EXPECT_TRUE(st->status().applied());
  EXPECT_FALSE(st->status().resources().empty());

  auto resize = c->call(resizeRequest(contract, "mlvm_heavy"), diags);
  ASSERT_TRUE(resize);
  EXPECT_EQ(resize->diagnostics(0).code(), "ERR_EXEC_019");

  // Metrics over the unix endpoint.
  {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, (dir_ + "/metrics.sock").c_str());
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
    ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    std::string text = readAll(fd);
    close(fd);
    EXPECT_NE(text.find("HTTP/1.0 200 OK"), std::string::npos);
    EXPECT_NE(text.find("mscale_contract_worker{contract=\"" + contract + "\",state=\"running\"} 1"),
              std::string::npos) << text;
  }

  auto rel = c->call(releaseRequest(contract), diags);
  ASSERT_TRUE(rel && rel->ok());
  EXPECT_FALSE(pathExists(dir_ + "/state/" + contract + ".msp"));
  usleep(100000);
  EXPECT_NE(kill(worker, 0), 0);
  EXPECT_FALSE(pathExists(CgroupLayout::discover().v2Dir(contract)));
  auto gone = c->call(statusRequest(contract), diags);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->diagnostics(0).code(), "ERR_EXEC_016");
}

// attach (the Slurm plugin's request): only root or the process's owner may move a process into a
// contract; root may, and the process is then pinned to the contract's CPU.
TEST(AgentAttach, OnlyRootOrTheOwnerMayMoveAProcess) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root (cgroups)";
  Logger log("agent-attach-test", false);
  AgentOptions o;
  o.socketPath = "/nonexistent/agent.sock"; // not listening: handle() is called directly
  o.appliers.cgroups = CgroupLayout::discover();
  Agent agent(o, log);
  std::string contract = "gtest_attach_" + std::to_string(getpid());
  PeerCredentials root{getpid(), 0, 0, {}};
  agent::Response submitted = agent.handle(submitRequest(plan::encodePlan(livePlan(contract, false)), "a.msp", {}), root);
  ASSERT_TRUE(submitted.ok()) << (submitted.diagnostics_size() ? submitted.diagnostics(0).message() : "");

  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  PeerCredentials nobody{getpid(), 65534, 65534, {}};
  agent::Response refused = agent.handle(attachRequest(contract, child), nobody);
  EXPECT_FALSE(refused.ok());
  ASSERT_EQ(refused.diagnostics_size(), 1);
  EXPECT_EQ(refused.diagnostics(0).code(), "ERR_EXEC_028");
  EXPECT_NE(refused.diagnostics(0).message().find("it belongs to uid 0, not to the caller (uid 65534)"),
            std::string::npos)
      << refused.diagnostics(0).message();

  agent::Response attached = agent.handle(attachRequest(contract, child), root);
  ASSERT_TRUE(attached.ok()) << (attached.diagnostics_size() ? attached.diagnostics(0).message() : "");
  EXPECT_EQ(attached.attachment().environment().at("MSCALE_CONTRACT"), contract);
  EXPECT_EQ(attached.attachment().environment().at("MSCALE_CPUS"), "0");
  // Its control page, to be taken from the agent (here: this process) by root.
  ASSERT_EQ(attached.attachment().fds_size(), 1);
  EXPECT_EQ(attached.attachment().fds(0).variable(), "MSCALE_CONTROL_FD");
  EXPECT_EQ(attached.attachment().agent_pid(), getpid());
  EXPECT_NE(attached.attachment().fds(0).inode(), 0u); // what the taker checks the number against
  EXPECT_EQ(agent.handle(statusRequest(contract), root).status().attached_size(), 1);
  std::optional<std::string> status = readFileText("/proc/" + std::to_string(child) + "/status");
  ASSERT_TRUE(status);
  EXPECT_NE(status->find("Cpus_allowed_list:\t0\n"), std::string::npos);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(agent.handle(releaseRequest(contract), root).ok());
}
