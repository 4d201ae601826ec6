// The HTTP endpoint: accept, parse with Beast's request parser, answer with its serializer.
#include "executor/agent/HttpEndpoint.h"

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
// A scrape or a piece of a log is one short request; a client that has not finished in this time is dropped.
constexpr std::chrono::seconds kDeadline{2};
constexpr size_t kMaxConnections = 64;
} // namespace

struct HttpEndpoint::Connection {
  int fd = -1;
  http::request_parser<http::empty_body> parser;
  std::string in, out; // bytes the parser has not taken; the response still to send
  bool answered = false;
  std::chrono::steady_clock::time_point deadline;
};

HttpEndpoint::HttpEndpoint(Handler handler) : handler_(std::move(handler)) {}

HttpEndpoint::~HttpEndpoint() {
  for (auto &[fd, c] : connections_)
    ::close(fd);
  if (listenFd_ >= 0)
    ::close(listenFd_);
  if (!unixPath_.empty())
    ::unlink(unixPath_.c_str());
}

bool HttpEndpoint::listen(const std::string &where, std::string &error) {
  llvm::StringRef w(where);
  if (w.consume_front("unix:")) {
    listenFd_ = listenUnix(w.str(), 0666, error);
    if (listenFd_ >= 0) {
      unixPath_ = w.str();
      bound_ = where;
    }
    return listenFd_ >= 0;
  }
  std::string host = "127.0.0.1";
  if (size_t colon = w.rfind(':'); colon != llvm::StringRef::npos) {
    llvm::StringRef h = w.take_front(colon);
    if (h.consume_front("[") && !h.consume_back("]")) {
      error = "expected [V6-ADDRESS]:PORT";
      return false;
    }
    if (h.empty()) {
      error = "expected HOST:PORT with a host";
      return false;
    }
    host = h.str();
    w = w.drop_front(colon + 1);
  }
  unsigned port;
  if (w.getAsInteger(10, port) || port > 65535) {
    error = "expected a port number, HOST:PORT or unix:PATH";
    return false;
  }
  listenFd_ = listenTcp(host, port, error);
  if (listenFd_ >= 0)
    bound_ = localAddress(listenFd_);
  return listenFd_ >= 0;
}

void HttpEndpoint::addPollFds(std::vector<pollfd> &fds) const {
  if (listenFd_ < 0)
    return;
  fds.push_back({listenFd_, POLLIN, 0});
  for (auto &[fd, c] : connections_)
    fds.push_back({fd, static_cast<short>(c->answered ? POLLOUT : POLLIN), 0});
}

bool HttpEndpoint::onReady(const pollfd &p) {
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

void HttpEndpoint::expire(std::chrono::steady_clock::time_point now) {
  std::vector<int> late;
  for (auto &[fd, c] : connections_)
    if (now >= c->deadline)
      late.push_back(fd);
  for (int fd : late)
    close(fd);
}

void HttpEndpoint::accept() {
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

void HttpEndpoint::onReadable(Connection &c) {
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
    if (method != http::verb::get && method != http::verb::head)
      return respond(c, 405);
    const auto &req = c.parser.get();
    HttpRequest request{std::string(req.target()), std::string(req[http::field::accept])};
    return send(c, handler_(request), method == http::verb::head);
  }
  if (eof)
    close(c.fd); // the client left before it asked
}

void HttpEndpoint::respond(Connection &c, unsigned status) {
  HttpReply reply;
  reply.status = status;
  reply.body = std::string(http::obsolete_reason(http::int_to_status(status))) + "\n";
  send(c, reply, false);
}

void HttpEndpoint::send(Connection &c, const HttpReply &reply, bool head) {
  bool header = c.parser.is_header_done();
  http::response<http::string_body> res;
  res.version(header ? c.parser.get().version() : 10);
  res.result(reply.status);
  res.keep_alive(false);
  res.set(http::field::content_type, reply.contentType);
  if (reply.status == 405)
    res.set(http::field::allow, "GET, HEAD");
  if (head) {
    res.content_length(reply.body.size());
  } else {
    res.body() = reply.body;
    res.prepare_payload();
  }
  std::ostringstream os;
  os << res;
  c.out = os.str();
  c.answered = true;
  onWritable(c);
}

void HttpEndpoint::onWritable(Connection &c) {
  if (sendPending(c.fd, c.out) && !c.out.empty())
    return; // the rest when the socket drains
  close(c.fd); // Connection: close
}

void HttpEndpoint::close(int fd) {
  ::close(fd);
  connections_.erase(fd);
}

} // namespace msc::exec
