#include "executor/client/AgentClient.h"

#include "support/Clock.h"
#include "support/CpuList.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace msc::exec {

std::string defaultAgentSocket() {
  const char *env = std::getenv("MSCALE_AGENT_SOCKET");
  return env && *env ? env : "/run/mscale/agent.sock";
}

std::optional<AgentClient> AgentClient::connect(const std::string &socketPath, DiagnosticEngine &diags) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof addr.sun_path) {
    diags.report(DiagCode::ERR_EXEC_015) << socketPath << "the path is too long for a Unix socket";
    return std::nullopt;
  }
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
    diags.report(DiagCode::ERR_EXEC_015) << socketPath << std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return std::nullopt;
  }
  return AgentClient(fd, socketPath);
}

AgentClient::~AgentClient() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::optional<agent::Response> AgentClient::call(agent::Request request, DiagnosticEngine &diags) {
  request.set_id(nextId_++);
  std::string error, payload, ioError;
  if (!writeFrame(fd_, request, error)) {
    // A refused peer may be closed before its request is read: the refusal is still there to read.
    ioError = error;
  }
  ProtocolError perr{DiagCode::ERR_EXEC_015, ""};
  if (!readFrame(fd_, 1ull << 30, payload, perr, ioError)) {
    if (!perr.message.empty())
      diags.report(perr.code) << perr.message;
    else
      diags.report(DiagCode::ERR_EXEC_015) << path_ << ioError;
    return std::nullopt;
  }
  agent::Response r;
  if (!r.ParseFromString(payload)) {
    diags.report(DiagCode::ERR_EXEC_015) << path_ << "the response does not decode";
    return std::nullopt;
  }
  emitDiagnostics(r, diags);
  return r;
}

agent::Request submitRequest(std::string planBytes, std::string planName, std::vector<std::string> command) {
  agent::Request r;
  agent::SubmitRequest *s = r.mutable_submit();
  s->set_plan(std::move(planBytes));
  s->set_plan_name(std::move(planName));
  for (std::string &a : command)
    s->add_command(std::move(a));
  return r;
}
agent::Request statusRequest(const std::string &contract) {
  agent::Request r;
  r.mutable_status()->set_contract(contract);
  return r;
}
agent::Request releaseRequest(const std::string &contract) {
  agent::Request r;
  r.mutable_release()->set_contract(contract);
  return r;
}
agent::Request resizeRequest(const std::string &contract, const std::string &profile) {
  agent::Request r;
  r.mutable_resize()->set_contract(contract);
  r.mutable_resize()->set_profile(profile);
  return r;
}
agent::Request attachRequest(const std::string &contract, int pid) {
  agent::Request r;
  r.mutable_attach()->set_contract(contract);
  r.mutable_attach()->set_pid(pid);
  return r;
}

agent::Request listRequest() {
  agent::Request r;
  r.mutable_list();
  return r;
}

agent::Request loansRequest(bool timeline) {
  agent::Request r;
  r.mutable_loans()->set_timeline(timeline);
  return r;
}

agent::Request lookupRequest(const std::string &contract) {
  agent::Request r;
  r.mutable_lookup()->set_contract(contract);
  return r;
}

const char *workerStateName(agent::Worker::State s) {
  switch (s) {
  case agent::Worker::RUNNING:
    return "running";
  case agent::Worker::EXITED:
    return "exited";
  case agent::Worker::KILLED:
    return "killed";
  default:
    return "none";
  }
}

void printStatus(const agent::ContractStatus &s, llvm::raw_ostream &os) {
  os << "contract " << s.contract() << "\n";
  os << "  plan       " << s.plan_name() << " (topology " << llvm::format_hex(s.topology_fingerprint(), 18) << ")\n";
  os << "  applied    " << (s.applied() ? "yes" : "no") << "\n";
  if (!s.profile().empty())
    os << "  profile    " << s.profile() << "\n";
  if (!s.cgroup().empty())
    os << "  cgroup     " << s.cgroup() << "\n";
  const agent::Worker &w = s.worker();
  os << "  worker     " << workerStateName(w.state());
  if (w.pid() > 0)
    os << " pid " << w.pid();
  if (w.state() == agent::Worker::EXITED)
    os << " status " << w.exit_status();
  if (w.state() == agent::Worker::KILLED)
    os << " signal " << w.exit_status();
  os << "\n";
  for (const agent::AttachedProcess &a : s.attached()) {
    os << "  attached   pid " << a.pid();
    if (a.killed())
      os << " killed (no heartbeat)";
    else if (a.beats() == 0)
      os << " not beating yet (attached " << a.last_beat_ms_ago() << " ms ago)";
    else if (a.step() == ~uint64_t(0))
      os << " restoring, last beat " << a.last_beat_ms_ago() << " ms ago";
    else
      os << " step " << a.step() << ", last beat " << a.last_beat_ms_ago() << " ms ago";
    os << "\n";
  }
  // Every measurement is shown, or said to be unavailable with the agent's reason: never a guess.
  if (s.io_wait_ratio() >= 0)
    os << "  io wait    " << llvm::format("%.1f%%", s.io_wait_ratio() * 100) << " (PSI some avg10)\n";
  else
    os << "  io wait    unavailable: "
       << (s.io_wait_unavailable().empty() ? std::string("no PSI for the cgroup") : s.io_wait_unavailable()) << "\n";
  if (s.gpus_size() == 0) {
    if (s.gpu_unavailable().empty() || s.gpu_unavailable() == "the plan has no GPU slices")
      os << "  gpu        none (the plan has no GPU slices)\n";
    else
      os << "  gpu        unavailable: " << s.gpu_unavailable() << "\n";
  }
  for (const agent::GpuUtilisation &g : s.gpus()) {
    os << "  gpu        " << g.role() << ": " << llvm::format("%.0f%%", g.utilisation() * 100) << " busy, " << g.sms()
       << " SMs, " << llvm::format("%.1f TFLOP/s", g.tflops()) << " over "
       << llvm::format("%.2f GB", double(g.memory_bytes()) / 1e9) << ", density ";
    if (g.compute_density() > 0)
      os << llvm::format("%.3f TFLOP/s/GB", g.compute_density());
    else
      os << "unavailable (no work measured in the window)";
    os << ", " << llvm::format("%.1f C", double(g.temperature_mc()) / 1000) << " (" << g.backend() << ")\n";
  }
  for (const agent::RdmaRetries &r : s.rdma()) {
    os << "  rdma       " << r.role() << " " << r.port() << ": ";
    if (!r.available())
      os << "retries unavailable: " << r.unavailable_reason() << "\n";
    else if (r.retries_per_minute() < 0)
      os << r.retries_total() << " retries since the device started (per minute: needs a second reading)\n";
    else
      os << llvm::format("%.1f retries/min", r.retries_per_minute()) << " (" << r.retries_total()
         << " since the device started)\n";
  }
  auto lastOf = [&](std::initializer_list<llvm::StringRef> kinds, llvm::StringRef label) {
    const agent::HistoryEntry *last = nullptr;
    unsigned n = 0;
    for (const agent::HistoryEntry &h : s.history())
      if (llvm::is_contained(kinds, llvm::StringRef(h.kind()))) {
        last = &h;
        ++n;
      }
    os << "  " << label << n;
    if (last)
      os << ", last " << formatUtcMs(last->unix_ms()) << " " << last->kind() << ": " << last->text();
    os << "\n";
  };
  lastOf({"fault", "recovered", "gave-up"}, "faults     ");
  lastOf({"resize"}, "resizes    ");
  if (s.has_lending())
    printLending(s.lending(), os);
  for (const agent::Resource &r : s.resources()) {
    os << "  " << r.applier() << ":\n";
    if (r.applied().empty())
      os << "    nothing (the plan asks this applier for none)\n";
    for (const std::string &l : r.applied())
      os << "    " << l << "\n";
  }
  if (s.history_size()) {
    os << "  history:\n";
    for (const agent::HistoryEntry &h : s.history())
      os << "    " << formatUtcMs(h.unix_ms()) << " " << h.kind() << ": " << h.text() << "\n";
  }
}

namespace {
std::string cpusOf(const agent::Loan &l) {
  return formatCpuList(std::vector<unsigned>(l.cpus().begin(), l.cpus().end()));
}
// "2 units of 'trainer' on GPU 0", or "-" without GPU units.
std::string gpuOf(const agent::Loan &l) {
  if (!l.gpu_units())
    return "-";
  return std::to_string(l.gpu_units()) + (l.gpu_units() == 1 ? " unit" : " units") + " of '" + l.gpu_role() +
         "' on GPU " + std::to_string(l.gpu_index());
}
// "4 queue pairs of 'grads' on mlx5_0:1", or "-" without queue pairs.
std::string queuePairsOf(const agent::Loan &l) {
  if (!l.rdma_queue_pairs())
    return "-";
  return std::to_string(l.rdma_queue_pairs()) + (l.rdma_queue_pairs() == 1 ? " queue pair" : " queue pairs") +
         " of '" + l.rdma_role() + "' on " + l.rdma_port();
}
// What one loan holds, as a sentence: "CPUs 1-2 and GPU 2 units of 'trainer' on GPU 0 and RDMA 4
// queue pairs of 'grads' on mlx5_0:1".
std::string heldBy(const agent::Loan &l) {
  std::string out = l.cpus_size() ? "CPUs " + cpusOf(l) : "";
  if (l.gpu_units())
    out += (out.empty() ? "GPU " : " and GPU ") + gpuOf(l);
  if (l.rdma_queue_pairs())
    out += (out.empty() ? "RDMA " : " and RDMA ") + queuePairsOf(l);
  return out;
}
std::string msText(uint64_t ns) { return llvm::formatv("{0:f3} ms", double(ns) / 1e6).str(); }
} // namespace

void printLending(const agent::Lending &l, llvm::raw_ostream &os) {
  if (l.borrower()) {
    os << "  borrows    ";
    if (l.frozen() || l.loans().empty())
      os << "nothing now: frozen until a contract lends\n";
    else
      for (int i = 0; i < l.loans_size(); ++i)
        os << (i ? "             " : "") << heldBy(l.loans(i)) << " of " << l.loans(i).owner() << " (for "
           << l.loans(i).since_ms_ago() << " ms)\n";
    return;
  }
  os << "  phase      " << (l.phase().empty() ? std::string("none (before its first, or between phases)") : l.phase())
     << "\n";
  os << "  lends      ";
  if (l.loans().empty())
    os << "nothing now\n";
  for (int i = 0; i < l.loans_size(); ++i)
    os << (i ? "             " : "") << heldBy(l.loans(i)) << " to " << l.loans(i).borrower() << " (for "
       << l.loans(i).since_ms_ago() << " ms)\n";
  os << "  reclaims   " << l.reclaims() << " of " << l.entries() << " phase entries found something they keep lent, "
     << l.missed() << " missed the bound of " << msText(l.reclaim_within_ns());
  if (l.reclaims())
    os << ", the longest " << msText(l.worst_reclaim_ns());
  os << "\n";
}

namespace {
// Only where a borrower cooperates: the others are frozen unasked.
void printYields(const agent::LoansResponse &r, llvm::raw_ostream &os) {
  const agent::YieldCounts &y = r.yields();
  if (y.asked())
    os << "asked to yield " << y.asked() << " times: " << y.yielded() << " yielded, " << y.expired()
       << " frozen when their time was up, " << y.withdrawn() << " withdrawn\n";
}
} // namespace

void printLoans(const agent::LoansResponse &r, llvm::raw_ostream &os) {
  if (r.mechanism().empty()) {
    os << "no loans: no contract on this node lends or borrows\n";
    return;
  }
  os << "taken back by " << r.mechanism() << "\n";
  if (r.loans().empty()) {
    os << "nothing lent now\n";
    printYields(r, os);
    return;
  }
  bool gpu = std::any_of(r.loans().begin(), r.loans().end(), [](const agent::Loan &l) { return l.gpu_units() != 0; });
  bool rdma = std::any_of(r.loans().begin(), r.loans().end(),
                          [](const agent::Loan &l) { return l.rdma_queue_pairs() != 0; });
  os << "OWNER\tBORROWER\tCPUS\t" << (gpu ? "GPU\t" : "") << (rdma ? "RDMA\t" : "") << "FOR\n";
  for (const agent::Loan &l : r.loans())
    os << l.owner() << "\t" << l.borrower() << "\t" << (l.cpus_size() ? cpusOf(l) : "-") << "\t"
       << (gpu ? gpuOf(l) + "\t" : "") << (rdma ? queuePairsOf(l) + "\t" : "") << l.since_ms_ago() << " ms\n";
  printYields(r, os);
}

void printList(const agent::ListResponse &l, llvm::raw_ostream &os) {
  if (l.contracts_size() == 0) {
    os << "no contracts admitted\n";
    return;
  }
  for (const agent::ContractStatus &s : l.contracts())
    os << s.contract() << "\t" << (s.applied() ? "applied" : "not-applied") << "\tworker "
       << workerStateName(s.worker().state()) << "\t" << s.plan_name() << "\n";
}

void printClusterContract(const agent::ClusterContract &c, llvm::raw_ostream &os) {
  os << "contract " << c.contract() << " (mod revision " << c.mod_revision() << ")\n";
  if (c.from_cache())
    os << "from the agent's cache: read " << c.age_ms() << " ms ago, kept " << c.cache_ttl_ms() << " ms\n";
  else
    os << "read from etcd (the agent's cache keeps it " << c.cache_ttl_ms() << " ms)\n";
  os << "worker:";
  if (c.command_size() == 0)
    os << " none";
  for (const std::string &arg : c.command())
    os << " " << arg;
  os << "\n";
  std::map<std::string, std::string> environment(c.environment().begin(), c.environment().end());
  for (const auto &[k, v] : environment)
    os << "environment: " << k << "=" << v << "\n";
  os << "source:\n" << c.source();
  if (!c.source().empty() && c.source().back() != '\n')
    os << "\n";
}

} // namespace msc::exec
