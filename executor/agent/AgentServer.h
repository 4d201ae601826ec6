// The agent's transport: the Unix socket, peer credentials checked at accept, frames in and
// responses out, the HTTP endpoint (metrics, logs); one thread, one poll loop that also wakes for the handler's
// timers. What a request means is the handler's business: this file only moves bytes.
#pragma once

#include "executor/core/Logger.h"
#include "executor/agent/HttpEndpoint.h"
#include "executor/agent/Sockets.h"
#include "executor/client/Protocol.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

struct ServerOptions {
  std::string socketPath;
  std::string http; // "" | "PORT" (127.0.0.1) | "HOST:PORT" | "unix:PATH" (HttpEndpoint::listen)
  std::optional<gid_t> socketGid;
  uint64_t maxFrameBytes = kDefaultMaxFrameBytes;
  std::vector<uid_t> allowedUids;
  std::vector<gid_t> allowedGids;
};

// What the loop calls: a decoded request of an allowed peer; a request to the HTTP endpoint; and the timers
// (wakeInMs: how long the loop may sleep at most; tick: after every wake-up).
struct ServerHandlers {
  std::function<agent::Response(const agent::Request &, const PeerCredentials &)> handle;
  HttpEndpoint::Handler http;
  std::function<int()> wakeInMs;
  std::function<void()> tick;
};

// The socket is mode 0660 (group from socket_group). Peers allowed: root, the agent's own uid,
// allowed_users, and peers whose primary or supplementary group is in allowed_groups. Anyone else
// gets ERR_EXEC_013 and is disconnected.
class AgentServer {
public:
  AgentServer(ServerOptions options, Logger &log, ServerHandlers handlers);
  ~AgentServer();
  AgentServer(const AgentServer &) = delete;
  AgentServer &operator=(const AgentServer &) = delete;

  // Creates the socket and the HTTP endpoint. False with ERR_EXEC_014.
  bool listen(DiagnosticEngine &diags);
  // Serves until stop(); returns the exit status.
  int serve();
  // Async-signal-safe.
  void stop();
  // Makes the loop run its tick now rather than at its next timeout; thread- and async-signal-safe.
  void wake();

  bool allowed(const PeerCredentials &peer) const;
  // Where the HTTP endpoint listens (HttpEndpoint::boundAddress); empty without one.
  const std::string &httpAddress() const { return http_.boundAddress(); }
  // Connections and frames refused, by error code (for the metrics).
  const std::map<std::string, uint64_t> &refusals() const { return refusals_; }

private:
  struct Connection;
  void accept();
  void onReadable(Connection &c);
  void onWritable(Connection &c);
  void queue(Connection &c, const agent::Response &r);
  void refuse(Connection &c, const ProtocolError &e, bool close);

  ServerOptions options_;
  Logger &log_;
  ServerHandlers handlers_;
  HttpEndpoint http_;
  int listenFd_ = -1, wakeRead_ = -1, wakeWrite_ = -1;
  volatile bool stopping_ = false;
  std::map<int, std::unique_ptr<Connection>> connections_;
  std::map<std::string, uint64_t> refusals_;
};

} // namespace msc::exec
