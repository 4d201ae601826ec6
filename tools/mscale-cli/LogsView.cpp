#include "tools/mscale-cli/LogsView.h"

#include "executor/client/AgentClient.h"
#include "executor/client/HttpGet.h"
#include "executor/client/LogsHttp.h"

#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

namespace msc::cli {

namespace {
std::atomic<bool> gInterrupted{false};
void onInterrupt(int) { gInterrupted = true; }

agent::Request logsRequest(const LogsViewOptions &o, int64_t attempt, uint64_t offset) {
  agent::Request r;
  agent::LogsRequest &l = *r.mutable_logs();
  l.set_contract(o.contract);
  l.set_rank(o.rank);
  l.set_attempt(attempt);
  l.set_offset(offset);
  return r;
}

// One piece from a node's HTTP endpoint: the Response the agent's socket would have given, its
// diagnostics re-emitted here with their codes.
std::optional<agent::Response> fetchOverHttp(const LogsViewOptions &o, const agent::LogsRequest &request,
                                             DiagnosticEngine &diags) {
  std::string error, where = "node '" + o.node + "' at " + o.http;
  std::optional<exec::HttpResponse> got =
      exec::httpGet(o.http, exec::logsTarget(request), exec::kProtobufType, std::chrono::seconds(10), error);
  agent::Response resp;
  if (got && (got->status != 200 || got->contentType != exec::kProtobufType))
    error = "HTTP " + std::to_string(got->status) + " (" + got->contentType + ")";
  else if (got && !resp.ParseFromString(got->body))
    error = "the answer does not decode as an agent response";
  // The node's own words are about its local worker: said as the node's answer, for the job's rank.
  for (const agent::Diagnostic &d : resp.diagnostics())
    if (error.empty() && d.severity() == "error")
      error = "it answers " + d.code() + " " + d.message();
  if (!error.empty()) {
    diags.report(DiagCode::ERR_CLUSTER_015) << o.contract << std::to_string(o.jobRank) << where + ": " + error;
    return std::nullopt;
  }
  return resp;
}
} // namespace

int showLogs(const LogsViewOptions &options, DiagnosticEngine &diags) {
  if (options.follow) {
    struct sigaction sa {};
    sa.sa_handler = onInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }
  std::optional<exec::AgentClient> client =
      options.http.empty() ? exec::AgentClient::connect(options.socket, diags) : std::nullopt;
  if (options.http.empty() && !client)
    return 1;
  auto fetch = [&](const agent::Request &request) {
    return client ? client->call(request, diags) : fetchOverHttp(options, request.logs(), diags);
  };
  int64_t attempt = options.attempt ? int64_t(*options.attempt) : -1;
  uint64_t offset = 0;
  bool first = true;
  llvm::raw_ostream &os = llvm::outs();
  while (!gInterrupted) {
    std::optional<agent::Response> resp = fetch(logsRequest(options, attempt, offset));
    if (!resp || !resp->ok())
      return gInterrupted ? 0 : 1;
    const agent::WorkerLog &log = resp->log();
    if (first && options.follow)
      os << "==> " << log.file() << " <==\n";
    first = false;
    os << log.data();
    os.flush();
    offset = log.next_offset();
    if (!log.data().empty())
      continue; // more may be there already
    if (!options.follow)
      return 0;
    // A newer attempt: the worker was restarted; follow it from its start.
    if (!options.attempt && !log.attempts().empty() && log.attempts(log.attempts_size() - 1) > log.attempt()) {
      attempt = log.attempts(log.attempts_size() - 1);
      offset = 0;
      os << "==> " << "rank" << options.rank << ".attempt" << attempt << ".log <==\n";
      continue;
    }
    attempt = log.attempt();
    if (!log.running())
      return 0;
    for (int i = 0; i < 5 && !gInterrupted; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

} // namespace msc::cli
