// The agent's HTTP endpoint on its own, driven by a poll loop in the test: GET and HEAD reach the
// handler with their target and Accept header, other methods and malformed requests are refused, a
// silent client neither holds the loop up nor stays past its deadline; TCP on HOST:PORT with the
// port the kernel picked, and the GET of executor/client against it.
#include "ExecTestUtil.h"

#include "executor/agent/HttpEndpoint.h"
#include "executor/client/HttpGet.h"

#include <atomic>
#include <thread>

#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace msc::exec;

namespace {

class HttpEndpointTest : public ::testing::Test {
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
  std::vector<HttpRequest> seen_;
  HttpEndpoint endpoint_{[this](const HttpRequest &r) {
    seen_.push_back(r);
    if (r.target == "/missing")
      return HttpReply{404, "text/plain; charset=utf-8", "not here\n"};
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", "mscale_contracts_admitted 0\n"};
  }};
};

} // namespace

TEST_F(HttpEndpointTest, GetReachesTheHandlerWithItsTargetAndAccept) {
  std::string r = exchange("GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Length: 28\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\nmscale_contracts_admitted 0\n"), std::string::npos) << r;
  r = exchange("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
  r = exchange("GET /missing HTTP/1.1\r\nHost: x\r\nAccept: application/x-protobuf\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("\r\n\r\nnot here\n"), std::string::npos) << r;
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[0].target, "/metrics");
  EXPECT_EQ(seen_[0].accept, "");
  EXPECT_EQ(seen_[2].target, "/missing");
  EXPECT_EQ(seen_[2].accept, "application/x-protobuf");
}

TEST_F(HttpEndpointTest, HeadHasTheLengthAndNoBody) {
  std::string r = exchange("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Length: 28\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.substr(r.size() - 4), "\r\n\r\n") << r;
}

TEST_F(HttpEndpointTest, OtherMethodsAndMalformedRequestsAreRefused) {
  std::string r = exchange("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Allow: GET, HEAD\r\n"), std::string::npos) << r;
  r = exchange("hello there\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 400 Bad Request\r\n", 0), 0u) << r;
  EXPECT_TRUE(seen_.empty()); // neither reached the handler
}

TEST_F(HttpEndpointTest, ASilentClientDoesNotHoldOthersUpAndIsDroppedAtItsDeadline) {
  int silent = connectClient();
  pump();
  EXPECT_EQ(exchange("GET /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200 OK", 0), 0u);
  endpoint_.expire(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  char c;
  EXPECT_EQ(read(silent, &c, 1), 0); // closed without an answer
  close(silent);
}

TEST(HttpEndpointTcp, ListensOnHostAndPortAndSaysThePortBound) {
  std::optional<HttpEndpoint> endpoint;
  endpoint.emplace([](const HttpRequest &r) { return HttpReply{200, "text/plain", "you asked " + r.target}; });
  std::string error;
  ASSERT_TRUE(endpoint->listen("127.0.0.1:0", error)) << error;
  std::string address = endpoint->boundAddress();
  llvm::StringRef port(address);
  ASSERT_TRUE(port.consume_front("127.0.0.1:")) << address;
  unsigned number = 0;
  EXPECT_FALSE(port.getAsInteger(10, number));
  EXPECT_GT(number, 0u);

  std::atomic<bool> done{false};
  std::thread loop([&] {
    while (!done) {
      std::vector<pollfd> fds;
      endpoint->addPollFds(fds);
      if (poll(fds.data(), fds.size(), 10) > 0)
        for (const pollfd &p : fds)
          if (p.revents)
            endpoint->onReady(p);
    }
  });
  std::optional<HttpResponse> got = httpGet(address, "/logs/a?rank=1", "", std::chrono::seconds(5), error);
  ASSERT_TRUE(got) << error;
  EXPECT_EQ(got->status, 200u);
  EXPECT_EQ(got->contentType, "text/plain");
  EXPECT_EQ(got->body, "you asked /logs/a?rank=1");
  done = true;
  loop.join();

  // Nobody listens there any more: a clear error, not a hang.
  endpoint.reset();
  EXPECT_FALSE(httpGet(address, "/", "", std::chrono::seconds(2), error));
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_FALSE(httpGet("no-port-here", "/", "", std::chrono::seconds(1), error));
  EXPECT_NE(error.find("HOST:PORT"), std::string::npos) << error;
}

TEST(HttpEndpointTcp, RefusesWhatIsNotAnAddress) {
  HttpEndpoint endpoint([](const HttpRequest &) { return HttpReply{}; });
  std::string error;
  EXPECT_FALSE(endpoint.listen(":9100", error));
  EXPECT_NE(error.find("with a host"), std::string::npos) << error;
  EXPECT_FALSE(endpoint.listen("[::1:9100", error));
  EXPECT_NE(error.find("[V6-ADDRESS]:PORT"), std::string::npos) << error;
  EXPECT_FALSE(endpoint.listen("127.0.0.1:70000", error));
  EXPECT_NE(error.find("port number"), std::string::npos) << error;
  EXPECT_FALSE(endpoint.listen("no-such-host.invalid:0", error));
  EXPECT_NE(error.find("no-such-host.invalid"), std::string::npos) << error;
  EXPECT_TRUE(endpoint.boundAddress().empty());
}
