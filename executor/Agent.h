// The node agent (`mscale-exec serve`): admits plans submitted over a Unix socket, applies them
// with a Session each, optionally starts their workers, and answers status / release / resize /
// list. One thread, one poll loop: the listening socket, the clients, the metrics endpoint.
//
// Security: the socket is created with mode 0660 (group from socket_group); every connection is
// checked with SO_PEERCRED. Allowed: root, the agent's own uid, allowed_users, and peers whose
// primary or supplementary group is in allowed_groups. Anyone else gets ERR_EXEC_013 and is closed.
// Admissions survive restarts: each admitted plan is kept in state_dir/<contract>.msp and re-applied
// (without its worker) when the agent starts.
#pragma once

#include "executor/Logger.h"
#include "executor/NodeConfig.h"
#include "executor/Protocol.h"
#include "executor/Session.h"

#include <map>
#include <memory>
#include <string>
#include <sys/types.h>

namespace msc::exec {

class Supervisor;

struct AgentOptions {
  std::string socketPath;
  std::string metrics; // "" | "PORT" (127.0.0.1) | "unix:PATH"
  std::string topology = "live"; // what plans are re-checked against (tests: a recorded node)
  NodeConfig config;
  ApplierOptions appliers;
};

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

class Agent {
public:
  Agent(AgentOptions options, Logger &log);
  ~Agent();

  // Creates the socket (and metrics endpoint), loads the state directory. False with diagnostics.
  bool start(DiagnosticEngine &diags);
  // Serves until stop(); returns the exit status.
  int serve();
  // Async-signal-safe.
  void stop();

  bool allowed(const PeerCredentials &peer) const;
  // One request, as the loop hands it over (tests and the fuzzer call it directly).
  agent::Response handle(const agent::Request &request, const PeerCredentials &peer);
  std::string metricsText() const;

private:
  struct Contract;
  struct Connection;
  void accept();
  void onReadable(Connection &c);
  void onWritable(Connection &c);
  void queue(Connection &c, const agent::Response &r);
  void reapWorkers();
  void serveMetrics();
  agent::ContractStatus statusOf(const Contract &c) const;
  agent::Response submit(const agent::SubmitRequest &r, DiagnosticEngine &diags, agent::Response &out);
  bool persist(const Contract &c, DiagnosticEngine &diags);
  void loadState(DiagnosticEngine &diags);
  SessionOptions sessionOptions() const;
  std::unique_ptr<Supervisor> makeSupervisor(Session &session, std::vector<std::string> command,
                                             std::map<std::string, std::string> environment,
                                             const std::string &planName);

  AgentOptions options_;
  Logger &log_;
  int listenFd_ = -1, metricsFd_ = -1, wakeRead_ = -1, wakeWrite_ = -1;
  std::string metricsUnixPath_;
  volatile bool stopping_ = false;
  std::map<std::string, std::unique_ptr<Contract>> contracts_;
  std::map<int, std::unique_ptr<Connection>> connections_;
  std::map<std::string, uint64_t> requests_, refusals_;
};

} // namespace msc::exec
