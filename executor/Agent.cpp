#include "executor/Agent.h"

#include "executor/Supervisor.h"

#include "executor/Metrics.h"
#include "executor/Sys.h"
#include "hal/Loader.h"
#include "ir/PlanFile.h"
#include "passes/Lowering.h"
#include "passes/PlanCheck.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cstring>
#include <cerrno>
#include <chrono>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace msc::exec {

struct Agent::Contract {
  std::unique_ptr<Session> session;
  std::unique_ptr<Supervisor> supervisor; // its worker (if any), heartbeats, recovery, resizes
  std::vector<std::string> command;
  agent::Worker::State workerState = agent::Worker::NONE;
  int exitStatus = 0;
  pid_t lastPid = 0;
  int64_t admittedMs = 0;
};

struct Agent::Connection {
  int fd = -1;
  PeerCredentials peer;
  FrameDecoder decoder;
  std::string out;
  bool closeAfterWrite = false;
  explicit Connection(uint64_t max) : decoder(max) {}
};

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

Agent::Agent(AgentOptions options, Logger &log) : options_(std::move(options)), log_(log) {}

Agent::~Agent() {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  for (auto &[name, c] : contracts_) {
    if (c->supervisor)
      c->supervisor->shutdown();
    c->session->release(diags);
  }
  for (auto &[fd, c] : connections_)
    ::close(fd);
  for (int fd : {listenFd_, metricsFd_, wakeRead_, wakeWrite_})
    if (fd >= 0)
      ::close(fd);
  if (listenFd_ >= 0)
    ::unlink(options_.socketPath.c_str());
  if (!metricsUnixPath_.empty())
    ::unlink(metricsUnixPath_.c_str());
}

SessionOptions Agent::sessionOptions() const {
  SessionOptions s;
  s.appliers = options_.appliers;
  s.config = options_.config;
  return s;
}

static int listenUnix(const std::string &path, std::string &error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    error = "the path is longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = errnoText(errno);
    return -1;
  }
  // A socket file left by a dead agent is replaced; a live agent is not.
  if (pathExists(path)) {
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = ::connect(probe, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    ::close(probe);
    if (live) {
      error = "another agent is listening there";
      ::close(fd);
      return -1;
    }
    ::unlink(path.c_str());
  }
  mode_t old = ::umask(0117); // the socket is born 0660, never wider
  int rc = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  int err = errno;
  ::umask(old);
  if (rc != 0 || ::chmod(path.c_str(), 0660) != 0 || ::listen(fd, 64) != 0) {
    error = errnoText(rc != 0 ? err : errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

bool Agent::start(DiagnosticEngine &diags) {
  std::string error;
  listenFd_ = listenUnix(options_.socketPath, error);
  if (listenFd_ < 0) {
    diags.report(DiagCode::ERR_EXEC_014) << options_.socketPath << error;
    return false;
  }
  if (options_.config.socketGid && ::chown(options_.socketPath.c_str(), static_cast<uid_t>(-1), *options_.config.socketGid) != 0) {
    diags.report(DiagCode::ERR_EXEC_014) << options_.socketPath << ("chown: " + errnoText(errno));
    return false;
  }
  if (!options_.metrics.empty()) {
    llvm::StringRef m(options_.metrics);
    if (m.consume_front("unix:")) {
      metricsUnixPath_ = m.str();
      metricsFd_ = listenUnix(metricsUnixPath_, error);
      if (metricsFd_ >= 0)
        ::chmod(metricsUnixPath_.c_str(), 0666); // metrics are read-only and public on the node
    } else {
      unsigned port;
      if (m.getAsInteger(10, port) || port > 65535) {
        error = "expected a port number or unix:PATH";
      } else {
        metricsFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1;
        ::setsockopt(metricsFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(metricsFd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(metricsFd_, 16) != 0) {
          error = errnoText(errno);
          ::close(metricsFd_);
          metricsFd_ = -1;
        }
      }
    }
    if (metricsFd_ < 0) {
      diags.report(DiagCode::ERR_EXEC_014) << options_.metrics << error;
      return false;
    }
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
    diags.report(DiagCode::ERR_EXEC_014) << options_.socketPath << ("pipe: " + errnoText(errno));
    return false;
  }
  wakeRead_ = p[0];
  wakeWrite_ = p[1];
  unsigned errorsBefore = diags.errorCount();
  if (!options_.config.stateDir.empty())
    loadState(diags);
  if (diags.errorCount() != errorsBefore && contracts_.empty() && !pathExists(options_.config.stateDir + "/."))
    return false; // the state directory itself is unusable: refuse to run without it
  log_.info("", "agent listening on " + options_.socketPath + " (mode 0660)" +
                    (options_.metrics.empty() ? "" : ", metrics on " + options_.metrics) + "; " +
                    options_.appliers.cgroups.describe());
  return true;
}

void Agent::stop() {
  stopping_ = true;
  if (wakeWrite_ >= 0) {
    char c = 1;
    ssize_t n = ::write(wakeWrite_, &c, 1);
    (void)n;
  }
}

bool Agent::allowed(const PeerCredentials &peer) const {
  if (peer.uid == 0 || peer.uid == ::geteuid())
    return true;
  const NodeConfig &c = options_.config;
  if (std::find(c.allowedUids.begin(), c.allowedUids.end(), peer.uid) != c.allowedUids.end())
    return true;
  if (std::find(c.allowedGids.begin(), c.allowedGids.end(), peer.gid) != c.allowedGids.end())
    return true;
  for (gid_t g : peer.groups)
    if (std::find(c.allowedGids.begin(), c.allowedGids.end(), g) != c.allowedGids.end())
      return true;
  return false;
}

int Agent::serve() {
  while (!stopping_) {
    std::vector<pollfd> fds;
    fds.push_back({listenFd_, POLLIN, 0});
    fds.push_back({wakeRead_, POLLIN, 0});
    if (metricsFd_ >= 0)
      fds.push_back({metricsFd_, POLLIN, 0});
    for (auto &[fd, c] : connections_)
      fds.push_back({fd, static_cast<short>(c->out.empty() ? POLLIN : POLLIN | POLLOUT), 0});
    uint64_t now = Supervisor::monotonicNs(), wake = now + 200'000'000;
    for (auto &[name, c] : contracts_)
      if (c->supervisor)
        wake = std::min(wake, c->supervisor->nextWakeNs(now));
    int n = ::poll(fds.data(), fds.size(), wake > now ? int((wake - now + 999'999) / 1'000'000) : 0);
    reapWorkers();
    now = Supervisor::monotonicNs();
    for (auto &[name, c] : contracts_)
      if (c->supervisor)
        c->supervisor->tick(now);
    if (n < 0 && errno != EINTR) {
      log_.error("", "poll: " + errnoText(errno));
      return 1;
    }
    if (n <= 0)
      continue;
    for (const pollfd &p : fds) {
      if (!p.revents)
        continue;
      if (p.fd == listenFd_)
        accept();
      else if (p.fd == wakeRead_) {
        char buf[64];
        while (::read(wakeRead_, buf, sizeof buf) > 0) {
        }
      } else if (p.fd == metricsFd_)
        serveMetrics();
      else if (auto it = connections_.find(p.fd); it != connections_.end()) {
        Connection &c = *it->second;
        if (p.revents & (POLLIN | POLLHUP | POLLERR))
          onReadable(c);
        if (connections_.count(p.fd) && (p.revents & POLLOUT))
          onWritable(c);
      }
    }
  }
  log_.info("", "agent stopping: releasing " + std::to_string(contracts_.size()) +
                    " contract(s) (admissions stay in the state directory)");
  return 0;
}

void Agent::accept() {
  for (;;) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      return;
    auto c = std::make_unique<Connection>(options_.config.maxFrameBytes);
    c->fd = fd;
    ucred cred{};
    socklen_t len = sizeof cred;
    ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
    c->peer = {cred.pid, cred.uid, cred.gid, {}};
    gid_t groups[256];
    socklen_t glen = sizeof groups;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0)
      c->peer.groups.assign(groups, groups + glen / sizeof(gid_t));
    Connection &ref = *c;
    connections_[fd] = std::move(c);
    if (!allowed(ref.peer)) {
      agent::Response r;
      ProtocolError e{DiagCode::ERR_EXEC_013,
                      formatDiag(diagInfo(DiagCode::ERR_EXEC_013).format,
                                 {std::to_string(ref.peer.uid), std::to_string(ref.peer.gid), std::to_string(ref.peer.pid)})};
      addError(r, e);
      log_.warn("", "refused: " + e.message);
      ++refusals_["ERR_EXEC_013"];
      ref.closeAfterWrite = true;
      queue(ref, r);
    }
  }
}

void Agent::queue(Connection &c, const agent::Response &r) {
  c.out += encodeFrame(r);
  onWritable(c);
}

void Agent::onWritable(Connection &c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n < 0) {
      c.out.clear();
      c.closeAfterWrite = true;
      break;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
  if (c.closeAfterWrite) {
    int fd = c.fd;
    ::close(fd);
    connections_.erase(fd); // c is gone from here on
  }
}

void Agent::onReadable(Connection &c) {
  if (c.closeAfterWrite)
    return;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if (n <= 0) {
      // End of stream: a partial frame is a truncated request.
      if (std::optional<ProtocolError> e = c.decoder.finish()) {
        agent::Response r;
        addError(r, *e);
        ++refusals_[diagInfo(e->code).name.str()];
        log_.warn("", "refused: " + e->message);
        c.closeAfterWrite = true;
        queue(c, r);
        return;
      }
      c.closeAfterWrite = true;
      onWritable(c);
      return;
    }
    c.decoder.append(llvm::StringRef(buf, static_cast<size_t>(n)));
    if (c.decoder.buffered() > options_.config.maxFrameBytes + kFrameHeaderBytes + sizeof buf)
      break; // let next() report the oversized frame
  }
  std::string payload;
  ProtocolError error;
  for (;;) {
    FrameDecoder::Result res = c.decoder.next(payload, error);
    if (res == FrameDecoder::Result::NeedMore)
      return;
    agent::Response r;
    if (res == FrameDecoder::Result::Error) {
      addError(r, error);
      ++refusals_[diagInfo(error.code).name.str()];
      log_.warn("", "refused: " + error.message);
      c.closeAfterWrite = true;
      queue(c, r);
      return;
    }
    std::optional<agent::Request> req = decodeRequest(payload, error);
    if (!req) {
      addError(r, error);
      ++refusals_[diagInfo(error.code).name.str()];
      log_.warn("", "refused: " + error.message);
    } else {
      r = handle(*req, c.peer);
    }
    int fd = c.fd;
    queue(c, r);
    if (!connections_.count(fd))
      return;
  }
}

void Agent::reapWorkers() {
  for (auto &[name, c] : contracts_) {
    pid_t pid = c->session->workerPid();
    if (pid <= 0)
      continue;
    int st;
    if (::waitpid(pid, &st, WNOHANG) == pid) {
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
        c->workerState = agent::Worker::KILLED;
        c->exitStatus = WTERMSIG(st);
      } else {
        c->workerState = agent::Worker::EXITED;
        c->exitStatus = WEXITSTATUS(st);
      }
      log_.info(name, "worker " + std::to_string(pid) + (WIFSIGNALED(st) ? " killed by signal " : " exited with status ") +
                          std::to_string(c->exitStatus));
    }
  }
}

agent::ContractStatus Agent::statusOf(const Contract &c) const {
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
  w->set_state(c.workerState);
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
  s.set_io_wait_ratio(session.ioWaitRatio());
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
  }
  return s;
}

bool Agent::persist(const Contract &c, DiagnosticEngine &diags) {
  if (options_.config.stateDir.empty())
    return true;
  const std::string &dir = options_.config.stateDir;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    diags.report(DiagCode::ERR_EXEC_018) << dir << errnoText(errno);
    return false;
  }
  return plan::writePlanFile(c.session->plan(), dir + "/" + c.session->contract() + ".msp", diags);
}

void Agent::loadState(DiagnosticEngine &diags) {
  const std::string &dir = options_.config.stateDir;
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
    auto c = std::make_unique<Contract>();
    std::string name = p->provenance().contract();
    std::optional<hal::Topology> live = hal::loadTopology(hal::TopologySource::fromArgument(options_.topology), diags);
    SessionOptions so = sessionOptions();
    if (live)
      so.topology = std::make_shared<const hal::Topology>(*live);
    c->session = std::make_unique<Session>(*p, name, f, log_, so);
    c->supervisor = makeSupervisor(*c->session, {}, {}, f);
    c->admittedMs = nowMs();
    passes::AdmittedSet admitted;
    for (auto &[n, other] : contracts_)
      admitted.holdings.push_back(passes::holdingFromPlan(other->session->plan()));
    passes::RecheckOptions ro{f, options_.config.strictFingerprint, options_.config.hugepageAutoAllocate};
    if (live && passes::recheckPlan(*p, *live, admitted, diags, ro) && c->session->apply(diags))
      log_.info(name, "re-admitted from " + f);
    else
      log_.error(name, "kept admitted from " + f + " but not applied; release it or fix the node");
    contracts_[name] = std::move(c);
  }
}

std::unique_ptr<Supervisor> Agent::makeSupervisor(Session &session, std::vector<std::string> command,
                                                  std::map<std::string, std::string> environment,
                                                  const std::string &planName) {
  SupervisorOptions o;
  o.command = std::move(command);
  o.environment = std::move(environment);
  o.recheck = passes::RecheckOptions{planName, options_.config.strictFingerprint, options_.config.hugepageAutoAllocate};
  o.loadTopology = [topology = options_.topology](DiagnosticEngine &d) {
    return hal::loadTopology(hal::TopologySource::fromArgument(topology), d);
  };
  std::string self = session.contract();
  o.admitted = [this, self] {
    passes::AdmittedSet others;
    for (auto &[n, c] : contracts_)
      if (n != self)
        others.holdings.push_back(passes::holdingFromPlan(c->session->plan()));
    return others;
  };
  o.planChanged = [this, self](const plan::Plan &) {
    auto it = contracts_.find(self);
    if (it == contracts_.end())
      return; // not admitted yet (cannot happen before submit ends) or released
    LogDiagnosticPrinter printer(log_);
    printer.setContract(self);
    DiagnosticEngine diags(nullptr, printer);
    persist(*it->second, diags); // a restarted agent re-applies the plan as it is now
  };
  return std::make_unique<Supervisor>(session, log_, std::move(o));
}

agent::Response Agent::submit(const agent::SubmitRequest &r, DiagnosticEngine &diags, agent::Response &out) {
  std::string planName = r.plan_name().empty() ? "submitted plan" : r.plan_name();
  std::optional<plan::Plan> p = plan::decodePlan(r.plan(), planName, diags);
  if (!p)
    return out;
  std::string name = p->provenance().contract();
  std::string why;
  if (!validContractId(name, why)) {
    diags.report(DiagCode::ERR_EXEC_021, Location{{}, planName, 0}) << name << why;
    return out;
  }
  std::optional<hal::Topology> live = hal::loadTopology(hal::TopologySource::fromArgument(options_.topology), diags);
  if (!live)
    return out;
  passes::AdmittedSet admitted;
  for (auto &[n, c] : contracts_)
    admitted.holdings.push_back(passes::holdingFromPlan(c->session->plan()));
  passes::RecheckOptions ro{planName, options_.config.strictFingerprint, options_.config.hugepageAutoAllocate};
  if (!passes::recheckPlan(*p, *live, admitted, diags, ro)) {
    log_.warn(name, "plan '" + planName + "' refused by the re-check");
    return out;
  }
  auto c = std::make_unique<Contract>();
  SessionOptions so = sessionOptions();
  so.topology = std::make_shared<const hal::Topology>(std::move(*live));
  c->session = std::make_unique<Session>(*p, name, planName, log_, so);
  c->admittedMs = nowMs();
  if (!c->session->apply(diags))
    return out;
  std::vector<std::string> argv(r.command().begin(), r.command().end());
  c->supervisor = makeSupervisor(*c->session, argv, {r.environment().begin(), r.environment().end()}, planName);
  if (r.command_size() > 0) {
    if (!c->supervisor->start(diags)) {
      c->session->release(diags);
      return out;
    }
    c->command = argv;
    c->workerState = agent::Worker::RUNNING;
    c->lastPid = c->session->workerPid();
  }
  if (!persist(*c, diags)) {
    c->session->release(diags);
    return out;
  }
  *out.mutable_status() = statusOf(*c);
  log_.info(name, "admitted plan '" + planName + "'");
  contracts_[name] = std::move(c);
  out.set_ok(true);
  return out;
}

agent::Response Agent::handle(const agent::Request &request, const PeerCredentials &peer) {
  agent::Response out;
  out.set_id(request.id());
  ResponseDiagnostics sink(out);
  DiagnosticEngine diags(nullptr, sink);
  auto find = [&](const std::string &name) -> Contract * {
    auto it = contracts_.find(name);
    if (it == contracts_.end()) {
      diags.report(DiagCode::ERR_EXEC_016) << name;
      return nullptr;
    }
    return it->second.get();
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
    if (Contract *c = find(request.status().contract())) {
      *out.mutable_status() = statusOf(*c);
      out.set_ok(true);
    }
    break;
  case agent::Request::kRelease:
    ++requests_["release"];
    if (Contract *c = find(request.release().contract())) {
      std::string name = request.release().contract();
      log_.info(name, "release requested by " + who);
      c->supervisor->shutdown();
      c->session->release(diags);
      if (!options_.config.stateDir.empty())
        ::unlink((options_.config.stateDir + "/" + name + ".msp").c_str());
      contracts_.erase(name);
      out.set_ok(true);
    }
    break;
  case agent::Request::kResize:
    ++requests_["resize"];
    if (Contract *c = find(request.resize().contract())) {
      const agent::ResizeRequest &r = request.resize();
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
      } else if (!c->supervisor->resizeTo(*next, "asked for by " + who, error)) {
        diags.report(DiagCode::ERR_EXEC_019) << r.contract() << r.profile() << error;
      } else {
        persist(*c, diags); // the resize is done; a state-file failure is reported on its own
        *out.mutable_status() = statusOf(*c);
        out.set_ok(true);
      }
    }
    break;
  case agent::Request::kList:
    ++requests_["list"];
    for (auto &[n, c] : contracts_)
      *out.mutable_list()->add_contracts() = statusOf(*c);
    if (!out.has_list())
      out.mutable_list();
    out.set_ok(true);
    break;
  case agent::Request::BODY_NOT_SET:
    diags.report(DiagCode::ERR_EXEC_012) << "the request carries no command";
    break;
  }
  if (diags.hasErrors())
    out.set_ok(false);
  return out;
}

std::string Agent::metricsText() const {
  std::vector<agent::ContractStatus> statuses;
  for (auto &[n, c] : contracts_)
    statuses.push_back(statusOf(*c));
  return renderMetrics(statuses, requests_, refusals_);
}

void Agent::serveMetrics() {
  int fd = ::accept4(metricsFd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0); // the request line; any path serves the metrics
  (void)n;
  std::string body = metricsText();
  std::string resp = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  size_t off = 0;
  while (off < resp.size()) {
    ssize_t w = ::send(fd, resp.data() + off, resp.size() - off, MSG_NOSIGNAL);
    if (w <= 0)
      break;
    off += static_cast<size_t>(w);
  }
  ::close(fd);
}

} // namespace msc::exec
