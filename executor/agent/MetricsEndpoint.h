// The agent's Prometheus endpoint: HTTP/1.x on a loopback TCP port or a Unix socket, parsed and
// written by Boost.Beast, served from the agent's poll loop.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msc::exec {

// Connections are non-blocking: a slow or silent client costs a slot until its deadline, never the
// loop's time. GET (and HEAD) of any path answers the metrics; other methods get 405, malformed
// requests 400.
class MetricsEndpoint {
public:
  using Render = std::function<std::string()>; // the exposition text, rendered per request
  explicit MetricsEndpoint(Render render);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint &) = delete;
  MetricsEndpoint &operator=(const MetricsEndpoint &) = delete;

  // `where`: "PORT" (127.0.0.1) or "unix:PATH" (mode 0666: the metrics are public on the node).
  // False with `error`.
  bool listen(const std::string &where, std::string &error);
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
  void onWritable(Connection &c);
  void close(int fd);

  Render render_;
  int listenFd_ = -1;
  std::string unixPath_;
  std::map<int, std::unique_ptr<Connection>> connections_;
};

} // namespace msc::exec
