// Requests to ledger operations; ledger entries to protocol statuses; the HTTP routes; the metrics text.
#include "executor/agent/Agent.h"

#include "executor/Supervisor.h"
#include "executor/host/Sys.h"
#include "executor/agent/Metrics.h"
#include "executor/client/LogsHttp.h"
#include "executor/rdma/RdmaBackend.h"
#include "executor/rdma/RdmaRetryCounters.h"
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace msc::exec {

namespace {

ServerOptions serverOptions(const AgentOptions &o) {
  ServerOptions s;
  s.socketPath = o.socketPath;
  s.http = o.http;
  s.socketGid = o.config.socketGid;
  s.maxFrameBytes = o.config.maxFrameBytes;
  s.allowedUids = o.config.allowedUids;
  s.allowedGids = o.config.allowedGids;
  return s;
}

agent::Worker::State workerState(NodeLedger::WorkerState s) {
  switch (s) {
  case NodeLedger::WorkerState::Running:
    return agent::Worker::RUNNING;
  case NodeLedger::WorkerState::Exited:
    return agent::Worker::EXITED;
  case NodeLedger::WorkerState::Killed:
    return agent::Worker::KILLED;
  case NodeLedger::WorkerState::None:
    break;
  }
  return agent::Worker::NONE;
}

} // namespace

Agent::Agent(AgentOptions options, Logger &log)
    : options_(std::move(options)), log_(log),
      ledger_(LedgerOptions{options_.topology, options_.nodeName, options_.config, options_.appliers}, log),
      server_(serverOptions(options_), log,
              ServerHandlers{
                  [this](const agent::Request &r, const PeerCredentials &p) { return handle(r, p); },
                  [this](const HttpRequest &r) { return http(r); },
                  [this] {
                    uint64_t now = SystemClock::instance().monotonicNs();
                    uint64_t wake = std::min(ledger_.nextWakeNs(now), now + 200'000'000);
                    return wake > now ? int((wake - now + 999'999) / 1'000'000) : 0;
                  },
                  [this] {
                    ledger_.supervise(SystemClock::instance().monotonicNs());
                    if (tick_)
                      tick_();
                  },
              }) {}

bool Agent::start(DiagnosticEngine &diags) {
  if (!server_.listen(diags))
    return false;
  unsigned errorsBefore = diags.errorCount();
  if (!options_.config.stateDir.empty())
    ledger_.loadState(diags);
  if (diags.errorCount() != errorsBefore && ledger_.contracts().empty() &&
      !pathExists(options_.config.stateDir + "/."))
    return false; // the state directory itself is unusable: refuse to run without it
  log_.info("", "agent listening on " + options_.socketPath + " (mode 0660)" +
                    (httpAddress().empty() ? "" : ", metrics and logs on http " + httpAddress()) + "; " +
                    describeHostBackend(options_.config.hostBackend, options_.appliers.cgroups));
  return true;
}

int Agent::serve() {
  int rc = server_.serve();
  if (rc == 0)
    log_.info("", "agent stopping: releasing " + std::to_string(ledger_.contracts().size()) +
                      " contract(s) (admissions stay in the state directory)");
  return rc;
}

namespace {
void setYields(agent::LoansResponse &loans, const lending::YieldStats &s) {
  agent::YieldCounts *y = loans.mutable_yields();
  y->set_asked(s.asked);
  y->set_yielded(s.yielded);
  y->set_expired(s.expired);
  y->set_withdrawn(s.withdrawn);
}

agent::Loan loanOf(const lending::Loan &loan) {
  agent::Loan out;
  out.set_owner(loan.owner);
  out.set_borrower(loan.borrower);
  for (unsigned c : loan.cpus)
    out.add_cpus(c);
  if (const lending::ShareLoan &gpu = loan.shares[lending::kGpuShare]; !gpu.empty()) {
    out.set_gpu_units(gpu.units);
    out.set_gpu_role(loan.shareRoles[lending::kGpuShare]);
    out.set_gpu_index(loan.gpuIndex);
  }
  if (const lending::ShareLoan &rdma = loan.shares[lending::kRdmaShare]; !rdma.empty()) {
    out.set_rdma_queue_pairs(rdma.units);
    out.set_rdma_role(loan.shareRoles[lending::kRdmaShare]);
    out.set_rdma_port(loan.rdmaPort);
  }
  uint64_t now = SystemClock::instance().monotonicNs(); // the lending's clock
  out.set_since_ms_ago(int64_t((now - std::min(now, loan.sinceNs)) / 1'000'000));
  return out;
}
} // namespace

agent::ContractStatus Agent::statusOf(const NodeLedger::Contract &c) const {
  agent::ContractStatus s;
  const Session &session = *c.session;
  s.set_contract(session.contract());
  s.set_plan_name(session.planName());
  s.set_topology_fingerprint(session.plan().provenance().topology_fingerprint());
  s.set_admitted_unix_ms(c.admittedMs);
  s.set_applied(session.applied());
  for (auto &[applier, lines] : session.resources()) {
    agent::Resource *r = s.add_resources();
    r->set_applier(applier);
    for (const std::string &l : lines)
      r->add_applied(l);
  }
  agent::Worker *w = s.mutable_worker();
  w->set_state(workerState(c.workerState));
  w->set_pid(session.workerPid() > 0 ? session.workerPid() : c.lastPid);
  w->set_exit_status(c.exitStatus);
  for (const std::string &a : c.command)
    w->add_command(a);
  s.set_source_file(session.plan().provenance().source_file());
  s.set_profile(session.plan().provenance().profile());
  if (c.supervisor)
    for (const HistoryEntry &h : c.supervisor->history()) {
      agent::HistoryEntry *e = s.add_history();
      e->set_unix_ms(h.unixMs);
      e->set_kind(h.kind);
      e->set_text(h.text);
    }
  if (c.attached) {
    uint64_t now = SystemClock::instance().monotonicNs();
    for (const AttachedProcesses::Process &p : c.attached->processes()) {
      agent::AttachedProcess *a = s.add_attached();
      a->set_pid(p.pid);
      a->set_beats(p.lastBeats);
      a->set_step(p.control->step());
      a->set_last_beat_ms_ago(static_cast<int64_t>((now - p.lastBeatNs) / 1'000'000));
      a->set_killed(p.killed);
    }
  }
  s.set_io_wait_ratio(session.ioWaitRatio());
  if (s.io_wait_ratio() < 0)
    s.set_io_wait_unavailable(session.cgroupV2().empty()
                                  ? "the contract has no cgroup2 directory (no cgroup2 mount with the io controller)"
                                  : "no PSI for the contract's cgroup: '" + session.cgroupV2() +
                                        "/io.pressure' cannot be read (kernel without CONFIG_PSI or psi=0)");
  s.set_cgroup(session.cgroupV2());
  // The monitor's samples: sampling here would move the backend's windows under the monitor.
  std::vector<Session::GpuSample> samples = c.supervisor ? c.supervisor->lastSamples() : std::vector<Session::GpuSample>{};
  if (samples.empty() && session.workerPid() <= 0)
    samples = session.gpuSamples();
  for (const Session::GpuSample &g : samples) {
    agent::GpuUtilisation *u = s.add_gpus();
    u->set_role(g.role);
    u->set_backend(g.backend);
    u->set_utilisation(g.sample.utilisation);
    u->set_temperature_mc(g.sample.temperatureMilliC);
    u->set_sms(g.sample.sms);
    u->set_tflops(g.sample.tflops);
    u->set_memory_bytes(g.sample.memoryBytes);
    // The resize policy's measure (executor/ResizePolicy.cpp): TFLOP/s per GB of slice memory.
    if (g.sample.tflops > 0 && g.sample.memoryBytes > 0)
      u->set_compute_density(g.sample.tflops / (double(g.sample.memoryBytes) / 1e9));
  }
  if (samples.empty())
    s.set_gpu_unavailable(session.plan().gpu_slices_size() == 0 ? "the plan has no GPU slices"
                          : !session.applied()                  ? "the GPU slices are not applied"
                                                                : "the GPU backend gave no sample yet");
  for (const plan::RdmaSetting &r : session.plan().rdma()) {
    agent::RdmaRetries *out = s.add_rdma();
    out->set_role(r.role());
    out->set_port(r.device() + ":" + std::to_string(r.port()));
    if (session.rdmaBackend() && session.rdmaBackend()->name() == "sim") {
      out->set_available(false);
      out->set_retries_per_minute(-1);
      out->set_unavailable_reason("the sim RDMA backend simulates the port: it has no hardware counters");
      continue;
    }
    RdmaRetryReading reading = readRdmaRetries("", r.device(), r.port());
    out->set_available(reading.available);
    out->set_retries_per_minute(-1);
    if (!reading.available) {
      out->set_unavailable_reason(reading.unavailableReason);
      continue;
    }
    out->set_retries_total(reading.total);
    RdmaRetryRate &rate = rdmaRates_[s.contract() + "/" + out->port()];
    rate.add(RdmaRetryRate::Clock::now(), reading.total);
    out->set_retries_per_minute(rate.perMinute());
  }
  if (NodeLending *lending = ledger_.lending())
    if (std::optional<LendingView> v = lending->view(s.contract())) {
      agent::Lending *l = s.mutable_lending();
      l->set_borrower(v->borrower);
      l->set_phase(v->phase);
      l->set_frozen(v->frozen);
      for (const lending::Loan &loan : v->loans)
        *l->add_loans() = loanOf(loan);
      l->set_entries(v->reclaims.entries);
      l->set_reclaims(v->reclaims.reclaims);
      l->set_missed(v->reclaims.missed);
      l->set_reclaim_within_ns(v->reclaimWithinNs);
      l->set_worst_reclaim_ns(v->reclaims.worstNs);
      l->set_reclaim_sum_ns(v->reclaims.sumNs);
      l->set_ahead(v->reclaims.ahead);
      if (!v->borrower)
        for (uint64_t n : v->reclaims.buckets)
          l->add_reclaim_buckets(n);
      if (v->cpuTimeNs) {
        l->set_cpu_ns(*v->cpuTimeNs);
        l->set_cpu_ns_known(true);
      }
    }
  return s;
}

void Agent::submit(const agent::SubmitRequest &r, DiagnosticEngine &diags, agent::Response &out) {
  std::string planName = r.plan_name().empty() ? "submitted plan" : r.plan_name();
  std::optional<plan::Plan> p = plan::decodePlan(r.plan(), planName, diags);
  if (!p)
    return;
  if (r.check_only()) {
    if (ledger_.recheck(*p, planName, diags))
      out.set_ok(true);
    return;
  }
  const NodeLedger::Contract *c =
      ledger_.admit(*p, planName, {r.command().begin(), r.command().end()},
                    {r.environment().begin(), r.environment().end()}, diags);
  if (!c)
    return;
  *out.mutable_status() = statusOf(*c);
  out.set_ok(true);
}

void Agent::resize(const agent::ResizeRequest &r, const std::string &who, DiagnosticEngine &diags,
                   agent::Response &out) {
  log_.info(r.contract(), "resize to profile '" + r.profile() + "' requested by " + who);
  std::string planName = r.plan_name().empty() ? "resize plan" : r.plan_name();
  std::optional<plan::Plan> next = r.plan().empty() ? std::nullopt : plan::decodePlan(r.plan(), planName, diags);
  std::string error;
  if (!next) {
    if (r.plan().empty())
      diags.report(DiagCode::ERR_EXEC_019) << r.contract() << r.profile()
                                           << "the request carries no plan (mscale-cli compiles one)";
  } else if (next->provenance().contract() != r.contract()) {
    diags.report(DiagCode::ERR_EXEC_019) << r.contract() << r.profile()
                                         << "the plan is for contract '" + next->provenance().contract() + "'";
  } else if (!ledger_.resize(r.contract(), *next, "asked for by " + who, error, diags)) {
    diags.report(DiagCode::ERR_EXEC_019) << r.contract() << r.profile() << error;
  } else {
    *out.mutable_status() = statusOf(*ledger_.find(r.contract()));
    out.set_ok(true);
  }
}

namespace {

// The real uid of process `pid` (from /proc/PID/status), or nullopt when there is no such process.
std::optional<uid_t> processOwner(pid_t pid) {
  std::optional<std::string> status = readFileText("/proc/" + std::to_string(pid) + "/status");
  if (!status)
    return std::nullopt;
  llvm::StringRef text(*status);
  size_t at = text.find("\nUid:");
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  unsigned long long uid = 0;
  llvm::StringRef field = text.substr(at + 6).ltrim();
  if (llvm::consumeUnsignedInteger(field, 10, uid))
    return std::nullopt;
  return static_cast<uid_t>(uid);
}

} // namespace

// Only root, or the owner of the process, may move it: anyone the socket lets in must not be able
// to pin or confine someone else's processes.
void Agent::attach(const agent::AttachRequest &r, const PeerCredentials &peer, DiagnosticEngine &diags,
                   agent::Response &out) {
  pid_t pid = r.pid();
  std::optional<uid_t> owner = processOwner(pid);
  if (!owner) {
    diags.report(DiagCode::ERR_EXEC_028) << pid << r.contract() << "no such process";
    return;
  }
  if (peer.uid != 0 && *owner != peer.uid) {
    diags.report(DiagCode::ERR_EXEC_028) << pid << r.contract()
                                         << "it belongs to uid " + std::to_string(*owner) + ", not to the caller (uid " +
                                                std::to_string(peer.uid) + ")";
    return;
  }
  std::optional<NodeLedger::Attachment> attachment = ledger_.attach(r.contract(), pid, diags);
  if (!attachment)
    return;
  agent::Attachment *a = out.mutable_attachment();
  a->set_contract(r.contract());
  a->set_pid(pid);
  a->mutable_environment()->insert(attachment->environment.begin(), attachment->environment.end());
  for (const HandedFd &fd : attachment->fds) {
    agent::HandedFd *h = a->add_fds();
    h->set_variable(fd.variable);
    h->set_agent_fd(fd.agentFd);
    struct stat st{};
    if (::fstat(fd.agentFd, &st) == 0) {
      h->set_device(st.st_dev);
      h->set_inode(st.st_ino);
    }
  }
  a->set_agent_pid(::getpid());
  out.set_ok(true);
}

agent::Response Agent::handle(const agent::Request &request, const PeerCredentials &peer) {
  agent::Response out;
  out.set_id(request.id());
  ResponseDiagnostics sink(out);
  DiagnosticEngine diags(nullptr, sink);
  auto find = [&](const std::string &name) {
    const NodeLedger::Contract *c = ledger_.find(name);
    if (!c)
      diags.report(DiagCode::ERR_EXEC_016) << name;
    return c;
  };
  std::string who = "uid " + std::to_string(peer.uid) + " pid " + std::to_string(peer.pid);
  switch (request.body_case()) {
  case agent::Request::kSubmit:
    ++requests_["submit"];
    log_.info("", "submit from " + who);
    submit(request.submit(), diags, out);
    break;
  case agent::Request::kStatus:
    ++requests_["status"];
    if (const NodeLedger::Contract *c = find(request.status().contract())) {
      *out.mutable_status() = statusOf(*c);
      out.set_ok(true);
    }
    break;
  case agent::Request::kRelease:
    ++requests_["release"];
    if (find(request.release().contract())) {
      log_.info(request.release().contract(), "release requested by " + who);
      ledger_.release(request.release().contract(), diags);
      out.set_ok(true);
    }
    break;
  case agent::Request::kResize:
    ++requests_["resize"];
    if (find(request.resize().contract()))
      resize(request.resize(), who, diags, out);
    break;
  case agent::Request::kAttach:
    ++requests_["attach"];
    if (find(request.attach().contract())) {
      log_.info(request.attach().contract(), "attach of process " + std::to_string(request.attach().pid()) +
                                                 " requested by " + who);
      attach(request.attach(), peer, diags, out);
    }
    break;
  case agent::Request::kList:
    ++requests_["list"];
    out.mutable_list();
    for (auto &[n, c] : ledger_.contracts())
      *out.mutable_list()->add_contracts() = statusOf(*c);
    out.set_ok(true);
    break;
  case agent::Request::kLogs:
    ++requests_["logs"];
    logs(request.logs(), diags, out);
    break;
  case agent::Request::kLoans: {
    ++requests_["loans"];
    agent::LoansResponse *loans = out.mutable_loans();
    if (NodeLending *lending = ledger_.lending()) {
      loans->set_mechanism(lending->mechanism());
      loans->set_lent_core_ns(lending->lentCoreNs());
      loans->set_lent_gpu_unit_ns(lending->lentUnitNs(lending::kGpuShare));
      loans->set_lent_queue_pair_ns(lending->lentUnitNs(lending::kRdmaShare));
      setYields(*loans, lending->yieldStats());
      for (const lending::Loan &loan : lending->loans())
        *loans->add_loans() = loanOf(loan);
      if (request.loans().timeline()) {
        NodeLending::Timeline t = lending->timeline();
        loans->set_now_ns(t.nowNs);
        for (const NodeLending::Timeline::OwnerInfo &o : t.owners) {
          agent::LendingOwner *owner = loans->add_owners();
          owner->set_contract(o.contract);
          owner->mutable_cpus()->Add(o.cpus.begin(), o.cpus.end());
          for (const std::string &p : o.phases)
            owner->add_phases(p);
        }
        for (const lending::TimelineChange &c : t.changes) {
          agent::TimelineChange *change = loans->add_timeline();
          change->set_at_ns(c.atNs);
          change->set_contract(c.contract);
          change->set_borrower(c.borrower);
          change->mutable_phases()->Add(c.phases.begin(), c.phases.end());
          change->mutable_cpus()->Add(c.cpus.begin(), c.cpus.end());
        }
      }
    }
    out.set_ok(true);
    break;
  }
  case agent::Request::kLookup:
    ++requests_["lookup"];
    if (!lookup_) {
      diags.report(DiagCode::ERR_EXEC_027) << request.lookup().contract();
    } else {
      agent::Diagnostic error;
      if (lookup_(request.lookup().contract(), *out.mutable_contract(), error))
        out.set_ok(true);
      else
        *out.add_diagnostics() = error;
    }
    break;
  case agent::Request::BODY_NOT_SET:
    diags.report(DiagCode::ERR_EXEC_012) << "the request carries no command";
    break;
  }
  if (diags.hasErrors())
    out.set_ok(false);
  return out;
}

HttpReply Agent::http(const HttpRequest &request) {
  llvm::StringRef target(request.target);
  llvm::StringRef path = target.split('?').first;
  if (path == "/" || path == "/metrics")
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metricsText()};
  if (!path.startswith(kLogsRoute))
    return HttpReply{404, "text/plain; charset=utf-8", "not found: this agent serves /metrics and " +
                                                           std::string(kLogsRoute) + "CONTRACT\n"};
  ++requests_["logs"];
  agent::Response out;
  ResponseDiagnostics collect(out);
  DiagnosticEngine diags(nullptr, collect);
  std::string why;
  if (std::optional<agent::LogsRequest> r = parseLogsTarget(target, why))
    logs(*r, diags, out);
  else
    diags.report(DiagCode::ERR_EXEC_012) << "GET " + request.target + ": " + why;
  if (diags.hasErrors())
    out.set_ok(false);
  // A client of the protocol reads the Response the socket would have sent: the diagnostics keep
  // their codes and arguments.
  if (llvm::StringRef(request.accept).contains(kProtobufType))
    return HttpReply{200, kProtobufType, out.SerializeAsString()};
  if (out.ok())
    return HttpReply{200, "text/plain; charset=utf-8", out.log().data()};
  std::string text;
  llvm::raw_string_ostream os(text);
  TextDiagnosticPrinter printer(os);
  DiagnosticEngine render(nullptr, printer);
  emitDiagnostics(out, render);
  bool notKept = out.diagnostics_size() && out.diagnostics(0).code() == "ERR_EXEC_031";
  return HttpReply{notKept ? 404u : 400u, "text/plain; charset=utf-8", os.str()};
}

// Worker output is read from the files, not from the ledger: it stays readable after the contract
// ended, until the contract is admitted again.
void Agent::logs(const agent::LogsRequest &r, DiagnosticEngine &diags, agent::Response &out) {
  const std::string &contract = r.contract();
  std::string why, rank = std::to_string(r.rank());
  if (!validContractId(contract, why)) {
    diags.report(DiagCode::ERR_EXEC_021) << contract << why;
    return;
  }
  std::string dir = ledger_.logDir(contract);
  if (dir.empty()) {
    diags.report(DiagCode::ERR_EXEC_031) << contract << rank << "the agent keeps none without a state_dir (node config)";
    return;
  }
  std::vector<uint32_t> attempts;
  std::string prefix = "rank" + rank + ".attempt";
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string file = entry.path().filename().string();
    llvm::StringRef name(file);
    uint32_t attempt = 0;
    if (name.consume_front(prefix) && name.consume_back(".log") && !name.getAsInteger(10, attempt))
      attempts.push_back(attempt);
  }
  std::sort(attempts.begin(), attempts.end());
  if (attempts.empty()) {
    diags.report(DiagCode::ERR_EXEC_031) << contract << rank << "no worker of it ran on this node";
    return;
  }
  uint32_t attempt = r.attempt() < 0 ? attempts.back() : uint32_t(r.attempt());
  if (r.attempt() < 0 ? false : !std::binary_search(attempts.begin(), attempts.end(), attempt)) {
    std::string kept;
    for (uint32_t a : attempts)
      kept += (kept.empty() ? "" : ", ") + std::to_string(a);
    diags.report(DiagCode::ERR_EXEC_031) << contract << rank
                                         << "attempt " + std::to_string(r.attempt()) + " is not kept (kept: " + kept + ")";
    return;
  }
  agent::WorkerLog &log = *out.mutable_log();
  log.set_file(WorkerOutput::fileName(r.rank(), attempt, false));
  log.set_attempt(attempt);
  for (uint32_t a : attempts)
    log.add_attempts(a);
  const NodeLedger::Contract *c = ledger_.find(contract);
  log.set_running(c && c->workerState == NodeLedger::WorkerState::Running);
  std::string path = dir + "/" + log.file();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    diags.report(DiagCode::ERR_EXEC_031) << contract << rank << path + ": " + errnoText(errno);
    return;
  }
  struct stat st {};
  ::fstat(fd, &st);
  uint64_t size = uint64_t(st.st_size), offset = std::min<uint64_t>(r.offset(), size);
  uint64_t want = std::min<uint64_t>(size - offset, r.max_bytes() ? r.max_bytes() : 1u << 20);
  std::string data(want, '\0');
  ssize_t n = want ? ::pread(fd, data.data(), want, off_t(offset)) : 0;
  ::close(fd);
  data.resize(n > 0 ? size_t(n) : 0);
  log.set_next_offset(offset + data.size());
  log.set_data(std::move(data));
  out.set_ok(true);
}

std::string Agent::metricsText() const {
  std::vector<agent::ContractStatus> statuses;
  for (auto &[n, c] : ledger_.contracts())
    statuses.push_back(statusOf(*c));
  std::optional<agent::LoansResponse> loans;
  if (NodeLending *lending = ledger_.lending()) {
    loans.emplace();
    loans->set_mechanism(lending->mechanism());
    loans->set_lent_core_ns(lending->lentCoreNs());
    loans->set_lent_gpu_unit_ns(lending->lentUnitNs(lending::kGpuShare));
    loans->set_lent_queue_pair_ns(lending->lentUnitNs(lending::kRdmaShare));
    setYields(*loans, lending->yieldStats());
  }
  return renderMetrics(statuses, requests_, server_.refusals(), loans ? &*loans : nullptr);
}

} // namespace msc::exec
