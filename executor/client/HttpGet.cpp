#include "executor/client/HttpGet.h"

#include <llvm/ADT/StringRef.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

namespace http = boost::beast::http;

namespace msc::exec {

namespace {
using Clock = std::chrono::steady_clock;
// A piece of a log is at most what the agent sends at once (1 MiB) plus its framing.
constexpr uint64_t kBodyLimit = 64ull << 20;

int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? int(left) : 0;
}

// Waits until `fd` is ready for `events`; false with `error` at the deadline.
bool waitFor(int fd, short events, Clock::time_point deadline, std::string &error) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, msLeft(deadline));
    if (n > 0)
      return true;
    if (n == 0) {
      error = "timed out";
      return false;
    }
    if (errno != EINTR) {
      error = std::strerror(errno);
      return false;
    }
  }
}

int connectTo(const std::string &host, const std::string &port, Clock::time_point deadline, std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo *found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    error = "'" + host + "': " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS && waitFor(fd, POLLOUT, deadline, error)) {
      int so = 0;
      socklen_t len = sizeof so;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len);
      rc = so ? -1 : 0;
      if (so)
        error = std::strerror(so);
    } else if (rc != 0 && errno != EINPROGRESS) {
      error = std::strerror(errno);
    }
    if (rc != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}
} // namespace

std::optional<HttpResponse> httpGet(const std::string &address, const std::string &target, const std::string &accept,
                                    std::chrono::milliseconds timeout, std::string &error) {
  Clock::time_point deadline = Clock::now() + timeout;
  llvm::StringRef a(address);
  size_t colon = a.rfind(':');
  if (colon == llvm::StringRef::npos || colon == 0 || colon + 1 == a.size()) {
    error = "'" + address + "' is not HOST:PORT";
    return std::nullopt;
  }
  llvm::StringRef host = a.take_front(colon);
  if (host.consume_front("[") && !host.consume_back("]")) {
    error = "'" + address + "' is not [V6-ADDRESS]:PORT";
    return std::nullopt;
  }
  int fd = connectTo(host.str(), a.drop_front(colon + 1).str(), deadline, error);
  if (fd < 0)
    return std::nullopt;

  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, address);
  req.set(http::field::user_agent, "mscale-cli");
  if (!accept.empty())
    req.set(http::field::accept, accept);
  req.keep_alive(false);
  std::ostringstream os;
  os << req;
  std::string out = os.str(), in;
  bool ok = true;
  while (ok && !out.empty()) {
    ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    if (n > 0)
      out.erase(0, size_t(n));
    else if (n < 0 && (errno == EAGAIN || errno == EINTR))
      ok = waitFor(fd, POLLOUT, deadline, error);
    else {
      error = std::strerror(errno);
      ok = false;
    }
  }
  char buf[64 << 10];
  while (ok) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      in.append(buf, size_t(n));
      if (in.size() > kBodyLimit + (64 << 10)) {
        error = "the answer is larger than " + std::to_string(kBodyLimit >> 20) + " MiB";
        ok = false;
      }
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      ok = waitFor(fd, POLLIN, deadline, error);
    } else {
      error = std::strerror(errno);
      ok = false;
    }
  }
  ::close(fd);
  if (!ok)
    return std::nullopt;

  http::response_parser<http::string_body> parser;
  parser.body_limit(kBodyLimit);
  parser.eager(true);
  boost::system::error_code ec;
  size_t used = in.empty() ? 0 : parser.put(boost::asio::buffer(in), ec);
  if (!ec && used < in.size() && !parser.is_done())
    ec = http::error::partial_message;
  if (!ec && !parser.is_done())
    parser.put_eof(ec); // a body without Content-Length ends with the connection
  if (ec || !parser.is_done()) {
    error = in.empty() ? "the connection closed without an answer" : "the answer is not HTTP: " + ec.message();
    return std::nullopt;
  }
  const auto &res = parser.get();
  return HttpResponse{res.result_int(), std::string(res[http::field::content_type]), res.body()};
}

} // namespace msc::exec
