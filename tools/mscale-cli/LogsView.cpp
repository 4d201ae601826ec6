#include "tools/mscale-cli/LogsView.h"

#include "executor/client/AgentClient.h"

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
} // namespace

int showLogs(const LogsViewOptions &options, DiagnosticEngine &diags) {
  if (options.follow) {
    struct sigaction sa {};
    sa.sa_handler = onInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }
  std::optional<exec::AgentClient> client = exec::AgentClient::connect(options.socket, diags);
  if (!client)
    return 1;
  int64_t attempt = options.attempt ? int64_t(*options.attempt) : -1;
  uint64_t offset = 0;
  bool first = true;
  llvm::raw_ostream &os = llvm::outs();
  while (!gInterrupted) {
    std::optional<agent::Response> resp = client->call(logsRequest(options, attempt, offset), diags);
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
