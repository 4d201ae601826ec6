// The agent's HTTP endpoint: HTTP/1.x on a TCP address or a Unix socket, parsed and written by
// Boost.Beast, served from the agent's poll loop. What a path answers is the handler's (the agent
// routes /metrics and /logs/); this file only moves requests and replies.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

struct HttpRequest {
  std::string target; // "/logs/train?rank=1", as sent
  std::string accept; // the Accept header ("" when none)
};

struct HttpReply {
  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
};

// Connections are non-blocking: a slow or silent client costs a slot until its deadline, never the
// loop's time. GET and HEAD reach the handler (HEAD without the body); other methods get 405,
// malformed requests 400.
class HttpEndpoint {
public:
  using Handler = std::function<HttpReply(const HttpRequest &)>;
  explicit HttpEndpoint(Handler handler);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint &) = delete;
  HttpEndpoint &operator=(const HttpEndpoint &) = delete;

  // `where`: "PORT" (127.0.0.1), "HOST:PORT" (a name or an address, "[V6]:PORT"; port 0: one the
  // kernel picks), or "unix:PATH" (mode 0666: what it serves is public on the node). False with
  // `error`.
  bool listen(const std::string &where, std::string &error);
  // Where it listens: "HOST:PORT" with the port bound, or "unix:PATH"; empty before listen().
  const std::string &boundAddress() const { return bound_; }
  // The listening socket and every connection, with the events each waits for.
  void addPollFds(std::vector<pollfd> &fds) const;
  // Serves `p` when it is one of the endpoint's; false otherwise.
  bool onReady(const pollfd &p);
  // Closes connections past their deadline.
  void expire(std::chrono::steady_clock::time_point now);

private:
  struct Connection;
  void accept();
  void onReadable(Connection &c);
  void respond(Connection &c, unsigned status);
  void send(Connection &c, const HttpReply &reply, bool head);
  void onWritable(Connection &c);
  void close(int fd);

  Handler handler_;
  int listenFd_ = -1;
  std::string unixPath_, bound_;
  std::map<int, std::unique_ptr<Connection>> connections_;
};

} // namespace msc::exec
