// The agent's metrics endpoint on its own, driven by a poll loop in the test: answers GET and HEAD of
// any path, refuses other methods and malformed requests, and a silent client neither holds the loop
// up nor stays past its deadline.
#include "ExecTestUtil.h"

#include "executor/agent/MetricsEndpoint.h"

#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace msc::exec;

namespace {

class MetricsEndpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/msc-metrics-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/metrics.sock";
    std::string error;
    ASSERT_TRUE(endpoint_.listen("unix:" + path_, error)) << error;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  int connectClient() {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path_.c_str());
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    return fd;
  }
  // What the agent's loop does, a few rounds.
  void pump(int rounds = 5) {
    for (int i = 0; i < rounds; ++i) {
      std::vector<pollfd> fds;
      endpoint_.addPollFds(fds);
      if (poll(fds.data(), fds.size(), 10) <= 0)
        continue;
      for (const pollfd &p : fds) {
        if (p.revents) {
          EXPECT_TRUE(endpoint_.onReady(p));
        }
      }
    }
  }
  // Sends `request`, serves it, returns everything the endpoint wrote before closing.
  std::string exchange(const std::string &request) {
    int fd = connectClient();
    EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    pump();
    std::string out = test::readAll(fd);
    close(fd);
    return out;
  }

  std::string dir_, path_;
  MetricsEndpoint endpoint_{[] { return std::string("mscale_contracts_admitted 0\n"); }};
};

} // namespace

TEST_F(MetricsEndpointTest, GetOfAnyPathAnswersTheMetrics) {
  std::string r = exchange("GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Length: 28\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\nmscale_contracts_admitted 0\n"), std::string::npos) << r;
  r = exchange("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
}

TEST_F(MetricsEndpointTest, HeadHasTheLengthAndNoBody) {
  std::string r = exchange("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Length: 28\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.substr(r.size() - 4), "\r\n\r\n") << r;
}

TEST_F(MetricsEndpointTest, OtherMethodsAndMalformedRequestsAreRefused) {
  std::string r = exchange("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Allow: GET, HEAD\r\n"), std::string::npos) << r;
  r = exchange("hello there\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 400 Bad Request\r\n", 0), 0u) << r;
}

TEST_F(MetricsEndpointTest, ASilentClientDoesNotHoldOthersUpAndIsDroppedAtItsDeadline) {
  int silent = connectClient();
  pump();
  EXPECT_EQ(exchange("GET /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200 OK", 0), 0u);
  endpoint_.expire(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  char c;
  EXPECT_EQ(read(silent, &c, 1), 0); // closed without an answer
  close(silent);
}
