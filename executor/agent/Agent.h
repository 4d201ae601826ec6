// The node agent (`mscale-exec serve`): the protocol's requests (submit, status, release, resize,
// list, lookup, attach, logs) mapped onto the node's ledger (NodeLedger.h), behind the agent's transport
// (AgentServer.h); ledger entries as protocol statuses; the routes of its HTTP endpoint (/metrics, and
// /logs/ for readers on other machines) and the request counters of the metrics.
#pragma once

#include "executor/host/HostAppliers.h"
#include "executor/core/Logger.h"
#include "executor/NodeConfig.h"
#include "executor/agent/AgentServer.h"
#include "executor/agent/NodeLedger.h"
#include "executor/rdma/RdmaRetryCounters.h"
#include "executor/client/Protocol.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace msc::exec {

struct AgentOptions {
  std::string socketPath;
  std::string http; // "" | "PORT" (127.0.0.1) | "HOST:PORT" | "unix:PATH" (HttpEndpoint::listen)
  std::string topology = "live"; // what plans are re-checked against (tests: a recorded node)
  std::string nodeName;           // LedgerOptions::nodeName
  NodeConfig config;
  ApplierOptions appliers;
};

class Agent {
public:
  Agent(AgentOptions options, Logger &log);

  // Creates the socket (and the HTTP endpoint), loads the state directory. False with diagnostics.
  bool start(DiagnosticEngine &diags);
  // Serves until stop(); returns the exit status.
  int serve();
  // Async-signal-safe.
  void stop() { server_.stop(); }
  // Runs the tick at once (from any thread): the cluster's assignment watch calls it on a change.
  void wake() { server_.wake(); }

  bool allowed(const PeerCredentials &peer) const { return server_.allowed(peer); }
  // One request, as the loop hands it over (tests and the fuzzer call it directly).
  agent::Response handle(const agent::Request &request, const PeerCredentials &peer);
  std::string metricsText() const;
  // A GET of the HTTP endpoint: / and /metrics the metrics text, /logs/CONTRACT?... (LogsHttp.h)
  // what `logs` answers on the socket; anything else 404.
  HttpReply http(const HttpRequest &request);
  // Where the HTTP endpoint listens, the port bound ("10.0.0.7:41234"); empty without one.
  const std::string &httpAddress() const { return server_.httpAddress(); }

  // What else acts on the ledger from the agent's loop (the cluster's registration and assignments,
  // cluster/agent): called after every wake-up, at least every 200 ms, on the loop's thread, so the
  // ledger is never touched from two threads.
  NodeLedger &ledger() { return ledger_; }
  void setTick(std::function<void()> tick) { tick_ = std::move(tick); }
  // How a LookupRequest is answered: by the cluster agent (cluster/agent), which knows etcd; this
  // layer does not. True with `found` filled, or false with the coded `error`. Unset: the agent is
  // not in a cluster and refuses lookups (ERR_EXEC_027). Called on the loop's thread.
  using ContractLookup =
      std::function<bool(const std::string &contract, agent::ClusterContract &found, agent::Diagnostic &error)>;
  void setContractLookup(ContractLookup lookup) { lookup_ = std::move(lookup); }

private:
  agent::ContractStatus statusOf(const NodeLedger::Contract &c) const;
  void submit(const agent::SubmitRequest &r, DiagnosticEngine &diags, agent::Response &out);
  void attach(const agent::AttachRequest &r, const PeerCredentials &peer, DiagnosticEngine &diags,
              agent::Response &out);
  void resize(const agent::ResizeRequest &r, const std::string &who, DiagnosticEngine &diags, agent::Response &out);
  void logs(const agent::LogsRequest &r, DiagnosticEngine &diags, agent::Response &out);

  AgentOptions options_;
  Logger &log_;
  NodeLedger ledger_;
  AgentServer server_; // after the ledger, which its handlers use: closed before the releases
  std::map<std::string, uint64_t> requests_;
  // Retry readings per "contract/device:port", taken whenever a status is built (requests, scrapes).
  mutable std::map<std::string, RdmaRetryRate> rdmaRates_;
  std::function<void()> tick_;
  ContractLookup lookup_;
};

} // namespace msc::exec
