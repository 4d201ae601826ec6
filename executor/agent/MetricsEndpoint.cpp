// The metrics endpoint: accept, parse with Beast's request parser, answer with its serializer.
#include "executor/agent/MetricsEndpoint.h"

#include "executor/agent/Sockets.h"

#include <llvm/ADT/StringRef.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

namespace http = boost::beast::http;

namespace msc::exec {

namespace {
// A scrape is one short request; a client that has not finished in this time is dropped.
constexpr std::chrono::seconds kDeadline{2};
constexpr size_t kMaxConnections = 64;
} // namespace

struct MetricsEndpoint::Connection {
  int fd = -1;
  http::request_parser<http::empty_body> parser;
  std::string in, out; // bytes the parser has not taken; the response still to send
  bool answered = false;
  std::chrono::steady_clock::time_point deadline;
};

MetricsEndpoint::MetricsEndpoint(Render render) : render_(std::move(render)) {}

MetricsEndpoint::~MetricsEndpoint() {
  for (auto &[fd, c] : connections_)
    ::close(fd);
  if (listenFd_ >= 0)
    ::close(listenFd_);
  if (!unixPath_.empty())
    ::unlink(unixPath_.c_str());
}

bool MetricsEndpoint::listen(const std::string &where, std::string &error) {
  llvm::StringRef w(where);
  if (w.consume_front("unix:")) {
    listenFd_ = listenUnix(w.str(), 0666, error);
    if (listenFd_ >= 0)
      unixPath_ = w.str();
    return listenFd_ >= 0;
  }
  unsigned port;
  if (w.getAsInteger(10, port) || port > 65535) {
    error = "expected a port number or unix:PATH";
    return false;
  }
  listenFd_ = listenLoopback(port, error);
  return listenFd_ >= 0;
}

void MetricsEndpoint::addPollFds(std::vector<pollfd> &fds) const {
  if (listenFd_ < 0)
    return;
  fds.push_back({listenFd_, POLLIN, 0});
  for (auto &[fd, c] : connections_)
    fds.push_back({fd, static_cast<short>(c->answered ? POLLOUT : POLLIN), 0});
}

bool MetricsEndpoint::onReady(const pollfd &p) {
  if (listenFd_ >= 0 && p.fd == listenFd_) {
    accept();
    return true;
  }
  auto it = connections_.find(p.fd);
  if (it == connections_.end())
    return false;
  Connection &c = *it->second;
  if (c.answered)
    onWritable(c);
  else if (p.revents & (POLLIN | POLLHUP | POLLERR))
    onReadable(c);
  return true;
}

void MetricsEndpoint::expire(std::chrono::steady_clock::time_point now) {
  std::vector<int> late;
  for (auto &[fd, c] : connections_)
    if (now >= c->deadline)
      late.push_back(fd);
  for (int fd : late)
    close(fd);
}

void MetricsEndpoint::accept() {
  for (;;) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      return;
    if (connections_.size() >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->deadline = std::chrono::steady_clock::now() + kDeadline;
    connections_[fd] = std::move(c);
  }
}

void MetricsEndpoint::onReadable(Connection &c) {
  bool eof = receiveAvailable(c.fd, c.in, 16 << 10); // beyond the parser's header limit: a 400
  boost::system::error_code ec;
  while (!c.in.empty() && !c.parser.is_done()) {
    size_t used = c.parser.put(boost::asio::buffer(c.in), ec);
    c.in.erase(0, used);
    if (ec == http::error::need_more) {
      ec = {};
      break; // the rest of the request has not arrived
    }
    if (ec || used == 0)
      break;
  }
  if (ec)
    return respond(c, 400);
  if (c.parser.is_done()) {
    http::verb method = c.parser.get().method();
    return respond(c, method == http::verb::get || method == http::verb::head ? 200 : 405);
  }
  if (eof)
    close(c.fd); // the client left before it asked
}

void MetricsEndpoint::respond(Connection &c, unsigned status) {
  bool header = c.parser.is_header_done();
  http::response<http::string_body> res;
  res.version(header ? c.parser.get().version() : 10);
  res.result(status);
  res.keep_alive(false);
  if (status == 200) {
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    std::string body = render_();
    if (c.parser.get().method() == http::verb::head) {
      res.content_length(body.size());
    } else {
      res.body() = std::move(body);
      res.prepare_payload();
    }
  } else {
    if (status == 405)
      res.set(http::field::allow, "GET, HEAD");
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = std::string(res.reason()) + "\n";
    res.prepare_payload();
  }
  std::ostringstream os;
  os << res;
  c.out = os.str();
  c.answered = true;
  onWritable(c);
}

void MetricsEndpoint::onWritable(Connection &c) {
  if (sendPending(c.fd, c.out) && !c.out.empty())
    return; // the rest when the socket drains
  close(c.fd); // Connection: close
}

void MetricsEndpoint::close(int fd) {
  ::close(fd);
  connections_.erase(fd);
}

} // namespace msc::exec
