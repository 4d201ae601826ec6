// Admission, release, resize and persistence of the contracts on this node; reaping their workers.
#include "executor/agent/NodeLedger.h"

#include "admission/PlanRecheck.h"
#include "executor/WorkerVariables.h"
#include "executor/host/Sys.h"
#include "executor/lending/PlanLending.h"
#include "hal/LiveRefresh.h"
#include "hal/Loader.h"
#include "plan/PlanFile.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <dirent.h>
#include <filesystem>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace msc::exec {

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

NodeLedger::NodeLedger(LedgerOptions options, Logger &log) : options_(std::move(options)), log_(log) {}

NodeLedger::~NodeLedger() {
  // Borrowers first: a frozen one would not end on its supervisor's signals, and an owner's CPUs
  // must not stay lent once its contract is gone.
  lending_.reset();
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::string error;
  std::optional<NodeClaims> claims = usesLedger() ? NodeClaims::lock(claimsDir(), error) : std::nullopt;
  for (auto &[name, c] : contracts_) {
    if (c->supervisor)
      c->supervisor->shutdown();
    c->session->release(diags);
    if (claims) // released now: the admission stays in state_dir, to be claimed again at the next start
      claims->release(name);
  }
}

SessionOptions NodeLedger::sessionOptions() const {
  SessionOptions s;
  s.appliers = options_.appliers;
  s.config = options_.config;
  return s;
}

NodeLending &NodeLedger::makeLending() {
  if (!lending_)
    lending_ = std::make_unique<NodeLending>(
        log_, options_.config.hostBackend == HostBackend::Sim,
        options_.config.stateDir.empty() ? std::string() : options_.config.stateDir + "/borrowers");
  return *lending_;
}

namespace {
OwnerDevices ownerDevices(const Session &session) {
  OwnerDevices devices;
  devices.gpuBackend = session.gpuBackend();
  for (const HeldSlice &s : session.heldSlices())
    devices.slices.emplace_back(s.planIndex, s.id);
  devices.rdmaBackend = session.rdmaBackend();
  for (const HeldQpGroup &g : session.heldQpGroups())
    devices.qpGroups.emplace_back(g.planIndex, g.id);
  return devices;
}
} // namespace

void NodeLedger::startLending(const std::string &contract, const Contract &c) {
  const plan::Plan &plan = c.session->plan();
  if (plan.lending().phases().empty())
    return;
  std::string why;
  const worker::ControlPageHost *page =
      c.supervisor && c.supervisor->workers().size() ? c.supervisor->workers().rank(0).control.get() : nullptr;
  if (c.command.empty())
    why = "it was admitted without a worker, whose control page would say its phase";
  else if (!page)
    why = "its worker has no control page";
  else if (makeLending().addOwner(plan, *page, why, ownerDevices(*c.session)))
    return;
  LogDiagnosticPrinter printer(log_);
  printer.setContract(contract);
  DiagnosticEngine diags(nullptr, printer);
  diags.report(DiagCode::WRN_EXEC_006) << contract << why;
}

const NodeLedger::Contract *NodeLedger::find(const std::string &contract) const {
  auto it = contracts_.find(contract);
  return it == contracts_.end() ? nullptr : it->second.get();
}

bool NodeLedger::requestStopAfter(const std::string &contract, uint64_t step) {
  auto it = contracts_.find(contract);
  if (it == contracts_.end() || !it->second->supervisor)
    return false;
  it->second->supervisor->requestStopAfter(step);
  return true;
}

admission::Held NodeLedger::held() const {
  return heldExcept({}); // no contract id is empty
}

admission::Held NodeLedger::heldExcept(const std::string &contract) const {
  std::vector<const plan::Plan *> plans;
  for (const auto &[name, c] : contracts_)
    if (name != contract)
      plans.push_back(&c->session->plan());
  // What the node's other mscale-exec processes hold (a run beside the agent): one ledger per node.
  std::vector<NodeClaim> foreign = usesLedger() ? NodeClaims::look(claimsDir()) : std::vector<NodeClaim>{};
  std::erase_if(foreign, [](const NodeClaim &c) { return c.pid == ::getpid(); });
  for (const NodeClaim &c : foreign)
    if (c.contract != contract)
      plans.push_back(&c.plan);
  // The agent applied each admitted plan's pools: their pages are gone from the live free counts.
  return admission::heldByPlans(plans, /*hugepagesTakenFromFree=*/true);
}

std::string NodeLedger::claimsDir() const { return NodeClaims::dirFor(options_.config.claimsDir); }

bool NodeLedger::usesLedger() const {
  return NodeClaims::used(options_.config.hostBackend == HostBackend::Sim, options_.config.claimsDir);
}

// The node's lock, held across a re-check and the claim that follows it; a ledger that cannot be
// used refuses the admission (ERR_EXEC_032), as a run's does.
std::optional<NodeClaims> NodeLedger::lockClaims(DiagnosticEngine &diags) const {
  std::string error;
  std::optional<NodeClaims> claims = NodeClaims::lock(claimsDir(), error);
  if (!claims) {
    diags.report(DiagCode::ERR_EXEC_032) << claimsDir() << error;
    return claims;
  }
  std::vector<std::string> dropped;
  claims->read(dropped); // the stale claims go now, while the node is locked
  for (const std::string &line : dropped)
    log_.warn("", line);
  return claims;
}

void NodeLedger::claim(const plan::Plan &plan, NodeClaims &claims) {
  std::string error;
  if (!claims.claim(plan, "mscale-exec serve", error))
    log_.warn(plan.provenance().contract(), "not in the node's ledger (runs beside the agent do not see it): " + error);
}

std::string NodeLedger::statePath(const std::string &contract) const {
  return options_.config.stateDir + "/" + contract + ".msp";
}

bool NodeLedger::persist(const Contract &c, DiagnosticEngine &diags) {
  if (options_.config.stateDir.empty())
    return true;
  const std::string &dir = options_.config.stateDir;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    diags.report(DiagCode::ERR_EXEC_018) << dir << errnoText(errno);
    return false;
  }
  return plan::writePlanFile(c.session->plan(), statePath(c.session->contract()), diags);
}

void NodeLedger::loadState(DiagnosticEngine &diags) {
  const std::string &dir = options_.config.stateDir;
  // Borrowers an agent before this one left running: the lending ends them as it starts.
  if (std::error_code ec; !dir.empty() && options_.config.hostBackend != HostBackend::Sim &&
                          std::filesystem::is_directory(dir + "/borrowers", ec) &&
                          !std::filesystem::is_empty(dir + "/borrowers", ec))
    makeLending();
  DIR *d = ::opendir(dir.c_str());
  if (!d) {
    if (errno != ENOENT)
      diags.report(DiagCode::ERR_EXEC_018) << dir << errnoText(errno);
    return;
  }
  std::vector<std::string> files;
  while (dirent *e = ::readdir(d))
    if (llvm::StringRef(e->d_name).ends_with(".msp"))
      files.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  std::sort(files.begin(), files.end());
  for (const std::string &f : files) {
    std::optional<plan::Plan> p = plan::readPlanFile(f, diags);
    if (!p) {
      diags.report(DiagCode::ERR_EXEC_018) << f << "not a valid plan; remove it to drop the admission";
      continue;
    }
    std::string name = p->provenance().contract();
    if (contracts_.count(name)) {
      diags.report(DiagCode::ERR_EXEC_018) << f << "a second plan of contract '" + name + "'; remove one of them";
      continue;
    }
    auto c = std::make_unique<Contract>();
    std::shared_ptr<const hal::Topology> live = nodeTopology(diags);
    SessionOptions so = sessionOptions();
    so.topology = live;
    c->session = std::make_unique<Session>(*p, name, f, log_, so);
    c->supervisor = makeSupervisor(*c->session, {}, {}, f);
    c->admittedMs = nowMs();
    admission::RecheckOptions ro{f, options_.config.strictFingerprint, options_.config.hugepageAutoAllocate};
    std::optional<NodeClaims> claims;
    bool locked = !usesLedger() || (claims = lockClaims(diags));
    if (locked && live && admission::recheckPlan(*p, *live, held(), diags, ro) && c->session->apply(diags)) {
      if (claims)
        claim(*p, *claims);
      log_.info(name, "re-admitted from " + f);
    } else
      log_.error(name, "kept admitted from " + f + " but not applied; release it or fix the node");
    contracts_[name] = std::move(c);
  }
}

std::shared_ptr<const hal::Topology> NodeLedger::discoverNodeTopology(DiagnosticEngine &diags) const {
  std::optional<hal::Topology> topology = hal::loadTopology(hal::TopologySource::fromArgument(options_.topology), diags);
  if (!topology)
    return nullptr;
  if (!options_.nodeName.empty())
    topology->setName(options_.nodeName);
  return std::make_shared<const hal::Topology>(std::move(*topology));
}

std::shared_ptr<const hal::Topology> NodeLedger::nodeTopology(DiagnosticEngine &diags) const {
  hal::TopologySource source = hal::TopologySource::fromArgument(options_.topology);
  if (source.kind != hal::TopologySource::Kind::Live)
    return discoverNodeTopology(diags);
  if (live_) {
    std::optional<hal::Topology> updated;
    switch (hal::refreshLiveFacts(*live_, source.live.sysfsRoot, updated)) {
    case hal::LiveRefresh::Unchanged:
      return live_;
    case hal::LiveRefresh::Changed:
      live_ = std::make_shared<const hal::Topology>(std::move(*updated));
      return live_;
    case hal::LiveRefresh::Rediscover:
      break;
    }
  }
  live_ = discoverNodeTopology(diags);
  return live_;
}

std::string NodeLedger::logDir(const std::string &contract) const {
  return options_.config.stateDir.empty() ? std::string() : options_.config.stateDir + "/logs/" + contract;
}

std::unique_ptr<Supervisor> NodeLedger::makeSupervisor(Session &session, std::vector<std::string> command,
                                                       std::map<std::string, std::string> environment,
                                                       const std::string &planName, WorkerOutput *output) {
  SupervisorOptions o;
  o.output = output;
  o.command = std::move(command);
  o.environment = std::move(environment);
  if (!options_.config.stateDir.empty()) // the worker's MSCALE_PLAN: kept current across resizes
    o.planPath = std::filesystem::absolute(statePath(session.contract())).string();
  o.recheck = admission::RecheckOptions{planName, options_.config.strictFingerprint,
                                        options_.config.hugepageAutoAllocate};
  o.loadTopology = [this](DiagnosticEngine &d) -> std::optional<hal::Topology> {
    std::shared_ptr<const hal::Topology> t = nodeTopology(d);
    return t ? std::optional<hal::Topology>(*t) : std::nullopt;
  };
  o.deviceFailed = [this] { live_.reset(); }; // the next re-check discovers the node anew
  std::string self = session.contract();
  o.admitted = [this, self] { return heldExcept(self); };
  if (lending::isBorrower(session.plan()))
    o.paused = [this, self] { return lending_ && lending_->frozen(self); };
  // An owner's fault takes back what it lent before anything of the recovery starts.
  o.faulted = [this, self] {
    if (lending_ && lending_->lends(self))
      lending_->holdForRecovery(self);
  };
  o.planChanged = [this, self](const plan::Plan &) {
    auto it = contracts_.find(self);
    if (it == contracts_.end())
      return; // not admitted yet (cannot happen before admit ends) or released
    LogDiagnosticPrinter printer(log_);
    printer.setContract(self);
    DiagnosticEngine diags(nullptr, printer);
    persist(*it->second, diags); // a restarted agent re-applies the plan as it is now
  };
  return std::make_unique<Supervisor>(session, log_, std::move(o));
}

std::shared_ptr<const hal::Topology> NodeLedger::recheck(const plan::Plan &plan, const std::string &planName,
                                                         DiagnosticEngine &diags) const {
  std::string name = plan.provenance().contract();
  std::string why;
  if (!validContractId(name, why)) {
    diags.report(DiagCode::ERR_EXEC_021, Location{{}, planName, 0}) << name << why;
    return nullptr;
  }
  std::shared_ptr<const hal::Topology> live = nodeTopology(diags);
  if (!live)
    return nullptr;
  // Against every admitted contract, this one's name included: a second admission of it is refused.
  admission::RecheckOptions ro{planName, options_.config.strictFingerprint, options_.config.hugepageAutoAllocate};
  if (!admission::recheckPlan(plan, *live, held(), diags, ro)) {
    log_.warn(name, "plan '" + planName + "' refused by the re-check");
    return nullptr;
  }
  return live;
}

const NodeLedger::Contract *NodeLedger::admit(const plan::Plan &plan, const std::string &planName,
                                              std::vector<std::string> command,
                                              std::map<std::string, std::string> environment,
                                              DiagnosticEngine &diags) {
  std::string name = plan.provenance().contract();
  std::optional<NodeClaims> claims;
  if (usesLedger() && !(claims = lockClaims(diags)))
    return nullptr;
  std::shared_ptr<const hal::Topology> live = recheck(plan, planName, diags);
  if (!live)
    return nullptr;
  auto c = std::make_unique<Contract>();
  SessionOptions so = sessionOptions();
  so.topology = live;
  // A borrower runs on what the node lends: admitted by the lending, its worker confined to its
  // cgroups before it execs. Whatever fails after this takes it out again.
  bool borrower = lending::isBorrower(plan);
  if (borrower) {
    std::string why;
    if (!makeLending().addBorrower(plan, why)) {
      diags.report(DiagCode::ERR_EXEC_033, Location{{}, planName, 0}) << name << why;
      return nullptr;
    }
    so.confine = [this, name](pid_t pid, std::string &error) { return lending_->joinBorrower(name, pid, error); };
  }
  struct Unborrow {
    NodeLending *lending;
    std::string name;
    ~Unborrow() {
      if (lending)
        lending->remove(name);
    }
  } unborrow{borrower ? lending_.get() : nullptr, name};
  c->session = std::make_unique<Session>(plan, name, planName, log_, so);
  c->admittedMs = nowMs();
  if (!c->session->apply(diags))
    return nullptr;
  bool withWorker = !command.empty();
  if (withWorker && !logDir(name).empty()) {
    // One admission's output: a contract admitted again starts its logs afresh.
    std::error_code ec;
    std::filesystem::remove_all(logDir(name), ec);
    std::string error;
    c->output = WorkerOutput::create(logDir(name), {}, error);
    if (!c->output)
      log_.warn(name, "worker output not kept: " + error);
  }
  c->supervisor = makeSupervisor(*c->session, command, std::move(environment), planName, c->output.get());
  // Persisted before the worker starts: the state file is the plan its MSCALE_PLAN names.
  if (!persist(*c, diags)) {
    c->session->release(diags);
    return nullptr;
  }
  if (withWorker) {
    if (!c->supervisor->start(diags)) {
      if (!options_.config.stateDir.empty())
        ::unlink(statePath(name).c_str());
      c->session->release(diags);
      return nullptr;
    }
    c->command = std::move(command);
    c->workerState = WorkerState::Running;
    c->lastPid = c->session->workerPid();
  }
  if (claims)
    claim(plan, *claims);
  log_.info(name, "admitted plan '" + planName + "'");
  unborrow.lending = nullptr;
  startLending(name, *c);
  return (contracts_[name] = std::move(c)).get();
}

void NodeLedger::release(const std::string &contract, DiagnosticEngine &diags) {
  auto it = contracts_.find(contract);
  if (it == contracts_.end())
    return;
  if (lending_) // an owner's loans taken back; a borrower's processes ended (a frozen one ignores signals)
    lending_->remove(contract);
  it->second->supervisor->shutdown();
  it->second->session->release(diags);
  if (!options_.config.stateDir.empty())
    ::unlink(statePath(contract).c_str());
  std::string error;
  if (usesLedger())
    if (std::optional<NodeClaims> claims = NodeClaims::lock(claimsDir(), error))
      claims->release(contract);
  contracts_.erase(it);
}

std::optional<NodeLedger::Attachment> NodeLedger::attach(const std::string &contract, pid_t pid,
                                                         DiagnosticEngine &diags) {
  auto it = contracts_.find(contract);
  if (it == contracts_.end())
    return std::nullopt;
  Contract &c = *it->second;
  Session &session = *c.session;
  if (!session.applied()) {
    diags.report(DiagCode::ERR_EXEC_028) << pid << contract << "the contract is admitted but not applied";
    return std::nullopt;
  }
  // Its control page and pidfd first: once the process is in the contract's cgroups and CPUs, nothing
  // is left to fail.
  if (!c.attached)
    c.attached = std::make_unique<AttachedProcesses>(session.plan().fault_tolerance());
  std::string error;
  std::optional<std::vector<HandedFd>> own = c.attached->attach(pid, SystemClock::instance().monotonicNs(), error);
  if (!own) {
    diags.report(DiagCode::ERR_EXEC_028) << pid << contract << error;
    return std::nullopt;
  }
  if (!session.attachProcess(pid, diags)) {
    c.attached->detach(pid);
    diags.report(DiagCode::ERR_EXEC_028) << pid << contract << "its cgroups or CPUs could not be set";
    return std::nullopt;
  }
  Attachment out;
  out.environment = variablesWithoutFds(session.environment());
  setPlanVariables(session.plan(), out.environment);
  if (!options_.config.stateDir.empty())
    out.environment["MSCALE_PLAN"] = std::filesystem::absolute(statePath(contract)).string();
  for (auto &[name, value] : session.environment().variables) {
    int fd = 0;
    if (llvm::StringRef(name).ends_with("_FD") && !llvm::StringRef(value).getAsInteger(10, fd))
      out.fds.push_back({name, fd});
  }
  out.fds.insert(out.fds.end(), own->begin(), own->end());
  return out;
}

bool NodeLedger::resize(const std::string &contract, const plan::Plan &next, const std::string &why,
                        std::string &error, DiagnosticEngine &diags) {
  auto it = contracts_.find(contract);
  if (it == contracts_.end()) {
    error = "the contract is not admitted";
    return false;
  }
  if (!it->second->supervisor->resizeTo(next, why, error))
    return false;
  persist(*it->second, diags); // the resize is done; a state-file failure is reported on its own
  return true;
}

bool NodeLedger::reassign(const std::string &contract, std::map<std::string, std::string> environment,
                          const std::string &why, std::string &error) {
  auto it = contracts_.find(contract);
  if (it == contracts_.end() || !it->second->supervisor || it->second->command.empty() ||
      !it->second->session->applied()) {
    error = "the contract is not applied here with a worker";
    return false;
  }
  Contract &c = *it->second;
  if (!c.supervisor->reassign(std::move(environment), why, error))
    return false;
  // A worker that had ended (a planned stop) runs again; one being stopped is followed by reaping.
  if (c.workerState != WorkerState::Running && c.session->workerPid() > 0) {
    c.workerState = WorkerState::Running;
    c.exitStatus = 0;
  }
  if (std::optional<int> status = c.supervisor->finished()) {
    c.workerState = WorkerState::Exited;
    c.exitStatus = *status;
  }
  c.lastPid = c.session->workerPid();
  return true;
}

void NodeLedger::reapWorkers() {
  for (auto &[name, c] : contracts_) {
    if (c->supervisor) // a warm standby that ended (or was discarded): the supervisor's to note
      for (pid_t standby : c->supervisor->standbyPids()) {
        int st;
        if (::waitpid(standby, &st, WNOHANG) != standby)
          continue;
        LogDiagnosticPrinter printer(log_);
        printer.setContract(name);
        DiagnosticEngine diags(nullptr, printer);
        c->supervisor->onWorkerExit(standby, st, diags);
      }
    pid_t pid = c->session->workerPid();
    if (pid <= 0)
      continue;
    int st;
    if (::waitpid(pid, &st, WNOHANG) != pid)
      continue;
    if (c->supervisor) {
      LogDiagnosticPrinter printer(log_);
      printer.setContract(name);
      DiagnosticEngine diags(nullptr, printer);
      if (!c->supervisor->onWorkerExit(st, diags)) {
        c->lastPid = c->session->workerPid(); // recovered: a new worker runs
        continue;
      }
    }
    c->session->workerExited();
    if (WIFSIGNALED(st)) {
      c->workerState = WorkerState::Killed;
      c->exitStatus = WTERMSIG(st);
    } else {
      c->workerState = WorkerState::Exited;
      c->exitStatus = WEXITSTATUS(st);
    }
    log_.info(name, "worker " + std::to_string(pid) +
                        (WIFSIGNALED(st) ? " killed by signal " : " exited with status ") +
                        std::to_string(c->exitStatus));
  }
}

void NodeLedger::supervise(uint64_t nowNs) {
  reapWorkers();
  for (auto &[name, c] : contracts_) {
    // A warm standby that took over has a control page of its own: the lending reads that one now;
    // a borrower's worker is asked to yield on its own.
    if (lending_ && (lending_->lends(name) || lending_->borrows(name)) && c->supervisor &&
        c->supervisor->workers().size())
      if (const worker::ControlPageHost *page = c->supervisor->workers().rank(0).control.get())
        lending_->followPage(name, *page);
    if (c->supervisor) {
      c->supervisor->tick(nowNs);
      // Supervision can end while no worker runs (a restart after its back-off could not start).
      if (std::optional<int> status = c->supervisor->finished(); status && c->workerState == WorkerState::Running) {
        c->workerState = WorkerState::Exited;
        c->exitStatus = *status;
        log_.info(name, "supervision ended with status " + std::to_string(*status) + " while no worker ran");
      }
    }
    if (c->attached)
      for (const AttachedProcesses::Event &e : c->attached->tick(nowNs)) {
        if (e.hung)
          log_.warn(name, e.text);
        else
          log_.info(name, e.text);
      }
  }
}

uint64_t NodeLedger::nextWakeNs(uint64_t nowNs) const {
  uint64_t wake = UINT64_MAX;
  for (auto &[name, c] : contracts_) {
    if (c->supervisor)
      wake = std::min(wake, c->supervisor->nextWakeNs(nowNs));
    if (c->attached)
      wake = std::min(wake, c->attached->nextWakeNs(nowNs));
  }
  return wake;
}

} // namespace msc::exec
