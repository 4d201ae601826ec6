#include "executor/Session.h"

#include "executor/ProcessTree.h"
#include "executor/host/Sys.h"
#include "executor/gpu/GpuApplier.h"
#include "executor/gpu/GpuBackends.h"
#include "executor/rdma/RdmaApplier.h"
#include "executor/rdma/RdmaBackends.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace msc::exec {

Session::Session(plan::Plan plan, std::string contractId, std::string planName, Logger &log,
                 const SessionOptions &options)
    : plan_(std::move(plan)), contract_(std::move(contractId)), planName_(std::move(planName)), log_(log),
      options_(options) {}

Session::~Session() {
  if (applied_ || appliedCount_) {
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    release(diags);
  }
}

ApplyContext Session::context(DiagnosticEngine &diags) {
  const FailureInjection *inject = options_.inject.failIn.empty() ? nullptr : &options_.inject;
  return ApplyContext{plan_, contract_, log_, diags, env_, inject};
}

static BackendOptions makeBackendOptions(const SessionOptions &o) {
  BackendOptions b;
  b.gpu = o.config.gpuBackend;
  b.rdma = o.config.rdmaBackend;
  b.topology = o.topology.get();
  return b;
}

bool Session::buildAppliers(DiagnosticEngine &diags) {
  appliers_ = createHostAppliers(options_.config.hostBackend, options_.appliers);
  Location where{{}, planName_, 0};
  if (plan_.gpu_slices_size() > 0) {
    std::string why;
    gpu_ = selectGpuBackend(makeBackendOptions(options_), why, &diags);
    if (!gpu_) {
      diags.report(DiagCode::ERR_EXEC_020, where) << planName_ << "GPU slices" << why;
      return false;
    }
    log_.info(contract_, "gpu backend: " + gpu_->name() + (why.empty() ? "" : " (" + why + ")"));
    appliers_.push_back(createGpuApplier(*gpu_, [this](const std::string &line) { log_.info(contract_, "gpu: " + line); }));
  }
  if (plan_.rdma_size() > 0) {
    if (!options_.config.rdmaEnabled) {
      diags.report(DiagCode::ERR_EXEC_020, where)
          << planName_ << "RDMA queue pairs" << "the node config sets rdma.enabled: false";
      return false;
    }
    std::string why;
    rdma_ = selectRdmaBackend(makeBackendOptions(options_), why, &diags);
    if (!rdma_) {
      diags.report(DiagCode::ERR_EXEC_020, where) << planName_ << "RDMA queue pairs" << why;
      return false;
    }
    log_.info(contract_, "rdma backend: " + rdma_->name() + (why.empty() ? "" : " (" + why + ")"));
    appliers_.push_back(createRdmaApplier(*rdma_, [this](const std::string &line) { log_.info(contract_, "rdma: " + line); }));
  }
  return true;
}

bool Session::apply(DiagnosticEngine &diags) {
  std::string why;
  if (!validContractId(contract_, why)) {
    diags.report(DiagCode::ERR_EXEC_021, Location{{}, planName_, 0}) << contract_ << why;
    return false;
  }
  if (!buildAppliers(diags))
    return false;
  ApplyContext ctx = context(diags);
  for (appliedCount_ = 0; appliedCount_ < appliers_.size(); ++appliedCount_) {
    Applier &a = *appliers_[appliedCount_];
    if (!a.apply(ctx)) {
      log_.error(contract_, "applier '" + a.name() + "' failed; rolling back " + std::to_string(appliedCount_) +
                                " applied applier(s)");
      while (appliedCount_ > 0)
        appliers_[--appliedCount_]->rollback(ctx);
      env_ = {};
      return false;
    }
  }
  applied_ = true;
  log_.info(contract_, "plan '" + planName_ + "' applied (" + std::to_string(appliers_.size()) + " appliers)");
  return true;
}

void Session::release(DiagnosticEngine &diags) {
  // The whole tree, not the workers alone: without a cgroup (host_backend sim) no applier's
  // rollback kills what the workers started.
  killWorkerTree();
  for (pid_t pid : workers_)
    ::waitpid(pid, nullptr, 0);
  workers_.clear();
  ApplyContext ctx = context(diags);
  while (appliedCount_ > 0)
    appliers_[--appliedCount_]->rollback(ctx);
  if (applied_)
    log_.info(contract_, "released");
  applied_ = false;
  env_ = {};
}

std::vector<std::pair<std::string, std::vector<std::string>>> Session::resources() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (size_t i = 0; i < appliedCount_; ++i)
    out.emplace_back(appliers_[i]->name().str(), appliers_[i]->describe());
  return out;
}

AppliedState Session::appliedState() const {
  AppliedState state;
  for (size_t i = 0; i < appliedCount_; ++i)
    appliers_[i]->state(state);
  return state;
}

double Session::ioWaitRatio() const {
  std::string dir = cgroupV2();
  if (dir.empty())
    return -1;
  std::optional<std::string> text = readFileText(dir + "/io.pressure");
  if (!text)
    return -1;
  // "some avg10=0.00 avg60=0.00 avg300=0.00 total=0"
  llvm::StringRef t(*text);
  size_t p = t.find("avg10=");
  if (!t.starts_with("some") || p == llvm::StringRef::npos)
    return -1;
  double v;
  if (t.substr(p + 6).take_until([](char c) { return c == ' '; }).getAsDouble(v))
    return -1;
  return v / 100.0;
}

std::vector<Session::GpuSample> Session::gpuSamples() const {
  std::vector<GpuSample> out;
  if (!gpu_)
    return out;
  for (size_t i = 0; i < appliedCount_; ++i)
    if (const std::vector<AppliedSlice> *slices = appliedGpuSlices(*appliers_[i]))
      for (const AppliedSlice &s : *slices)
        if (std::optional<SliceSample> sample = gpu_->sample(s.id))
          out.push_back({s.role, gpu_->name().str(), *sample});
  return out;
}

void Session::workerExited(pid_t pid) { workers_.erase(std::remove(workers_.begin(), workers_.end(), pid), workers_.end()); }

void Session::killWorkerTree(const std::vector<pid_t> &sparing) {
  std::vector<pid_t> roots;
  for (pid_t pid : workers_)
    if (std::find(sparing.begin(), sparing.end(), pid) == sparing.end())
      roots.push_back(pid);
  if (roots.empty())
    return;
  if (roots.size() != workers_.size()) {
    killProcessTree(roots);
    return;
  }
  std::string dir = cgroupV2();
  int fd = dir.empty() ? -1 : ::open((dir + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    // No cgroup (host_backend sim, no cgroup2) or a kernel before 5.14: find the tree in /proc,
    // before the workers die and their children are handed to init.
    killProcessTree(workers_);
    return;
  }
  for (pid_t pid : workers_)
    ::kill(pid, SIGKILL);
  ssize_t n = ::write(fd, "1", 1);
  (void)n;
  ::close(fd);
}

std::vector<HeldSlice> Session::heldSlices() const {
  std::vector<HeldSlice> out;
  for (size_t i = 0; i < appliedCount_; ++i)
    if (const std::vector<AppliedSlice> *slices = appliedGpuSlices(*appliers_[i]))
      for (const AppliedSlice &s : *slices)
        out.push_back({s.planIndex, s.role, s.gpuIndex, s.id});
  return out;
}

std::vector<HeldQpGroup> Session::heldQpGroups() const {
  std::vector<HeldQpGroup> out;
  for (size_t i = 0; i < appliedCount_; ++i)
    if (const std::vector<AppliedQpGroup> *groups = appliedQpGroups(*appliers_[i]))
      for (const AppliedQpGroup &g : *groups)
        out.push_back({g.planIndex, g.role, g.id, g.device, g.port});
  return out;
}

Applier *Session::appliedNamed(llvm::StringRef name) const {
  for (size_t i = 0; i < appliedCount_; ++i)
    if (appliers_[i]->name() == name)
      return appliers_[i].get();
  return nullptr;
}

bool Session::handOverGpuSlices(const plan::Plan &next, std::vector<SliceId> &retiring,
                                std::vector<std::string> &changes, std::string &error) {
  Applier *gpu = appliedNamed("gpu");
  if (!gpu) {
    error = "the contract holds no GPU slices";
    return false;
  }
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  const FailureInjection *inject = nullptr;
  ApplyContext ctx{next, contract_, log_, diags, env_, inject};
  if (!replaceGpuSlices(*gpu, ctx, retiring, changes, error))
    return false;
  plan_ = next;
  return true;
}

void Session::retireGpuSlices(const std::vector<SliceId> &ids) {
  if (Applier *gpu = appliedNamed("gpu"))
    exec::retireGpuSlices(*gpu, ids);
}

bool Session::failOverRdma(std::vector<std::string> &moved, std::string &error) {
  Applier *rdma = appliedNamed("rdma");
  if (!rdma) {
    error = "the contract holds no RDMA queue pairs";
    return false;
  }
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  ApplyContext ctx = context(diags);
  return failOverDownPorts(*rdma, ctx, moved, error);
}

bool Session::startWorker(const std::vector<std::string> &argv, const std::map<std::string, std::string> &extraEnv,
                          DiagnosticEngine &diags, const std::vector<int> &extraFds) {
  return startWorkerProcess(argv, extraEnv, diags, extraFds, "") > 0;
}

pid_t Session::startWorkerProcess(const std::vector<std::string> &argv,
                                  const std::map<std::string, std::string> &extraEnv, DiagnosticEngine &diags,
                                  const std::vector<int> &extraFds, const std::string &label, int stdioFd) {
  WorkerEnvironment env = env_;
  env.stdioFd = stdioFd;
  for (auto &[k, v] : extraEnv)
    env.variables[k] = v;
  env.inheritedFds.insert(env.inheritedFds.end(), extraFds.begin(), extraFds.end());
  ApplyContext ctx = context(diags);
  std::string error, confineError;
  auto gate = [&](pid_t pid) {
    for (size_t i = 0; i < appliedCount_; ++i)
      if (!appliers_[i]->attach(ctx, pid))
        return false;
    return !options_.confine || options_.confine(pid, confineError);
  };
  unsigned errorsBefore = diags.errorCount();
  // A borrower's worker joins cgroups that stay frozen until the node lends it a CPU: its exec is
  // not waited for.
  pid_t pid = spawnGated(argv, env, gate, error, /*awaitExec=*/!options_.confine);
  if (pid < 0) {
    if (diags.errorCount() == errorsBefore)
      diags.report(DiagCode::ERR_EXEC_009) << (argv.empty() ? std::string() : argv[0])
                                           << (confineError.empty() ? error : confineError);
    return -1;
  }
  workers_.push_back(pid);
  log_.info(contract_, "worker " + std::to_string(pid) + (label.empty() ? "" : " (" + label + ")") +
                           " started: " + llvm::join(argv, " "));
  return pid;
}

bool Session::attachProcess(pid_t pid, DiagnosticEngine &diags) {
  ApplyContext ctx = context(diags);
  for (size_t i = 0; i < appliedCount_; ++i)
    if (!appliers_[i]->attach(ctx, pid))
      return false;
  log_.info(contract_, "process " + std::to_string(pid) + " attached");
  return true;
}

pid_t spawnGated(const std::vector<std::string> &argv, const WorkerEnvironment &env,
                 const std::function<bool(pid_t)> &gate, std::string &error, bool awaitExec) {
  if (argv.empty()) {
    error = "no command";
    return -1;
  }
  // Environment: ours, overridden by the appliers' variables.
  std::map<std::string, std::string> vars;
  for (char **e = environ; *e; ++e) {
    llvm::StringRef kv(*e);
    auto [k, v] = kv.split('=');
    vars[k.str()] = v.str();
  }
  for (auto &[k, v] : env.variables)
    vars[k] = v;
  std::vector<std::string> envStrings;
  for (auto &[k, v] : vars)
    envStrings.push_back(k + "=" + v);
  std::vector<char *> cargv, cenv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  for (std::string &e : envStrings)
    cenv.push_back(e.data());
  cenv.push_back(nullptr);

  int gatePipe[2], errPipe[2];
  if (::pipe2(gatePipe, O_CLOEXEC) != 0) {
    error = "pipe: " + errnoText(errno);
    return -1;
  }
  if (::pipe2(errPipe, O_CLOEXEC) != 0) {
    error = "pipe: " + errnoText(errno);
    ::close(gatePipe[0]);
    ::close(gatePipe[1]);
    return -1;
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    error = "fork: " + errnoText(errno);
    for (int fd : {gatePipe[0], gatePipe[1], errPipe[0], errPipe[1]})
      ::close(fd);
    return -1;
  }
  if (pid == 0) {
    // Child: wait for the gate, then exec. Only async-signal-safe calls from here on.
    // Our copy of the gate's write end goes first: were it open, a parent that cannot attach us
    // closes its own copy and waits for our exit, while we wait for an EOF that never comes.
    ::close(gatePipe[1]);
    ::close(errPipe[0]);
    char c;
    ssize_t n;
    do
      n = ::read(gatePipe[0], &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
      ::_exit(127); // the parent could not attach us: never run unconfined
    for (int sig = 1; sig < 32; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP)
        ::signal(sig, SIG_DFL);
    // A worker must not outlive its executor: its resources are released when the executor ends.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127); // the executor died before the line above

    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Everything but stdio, the error pipe and the inherited fds is closed on exec.
    ::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
    for (int fd : env.inheritedFds)
      ::fcntl(fd, F_SETFD, 0);
    if (env.stdioFd >= 0) { // dup2 leaves the copies open across exec
      ::dup2(env.stdioFd, STDOUT_FILENO);
      ::dup2(env.stdioFd, STDERR_FILENO);
    }
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    int err = errno;
    if (awaitExec) {
      ssize_t ignored = ::write(errPipe[1], &err, sizeof err);
      (void)ignored;
    } else { // nobody reads the pipe: the reason goes where the worker's output goes
      static const char what[] = "mscale-exec: cannot run ";
      const char *why = ::strerrordesc_np(err);
      for (const char *part : std::initializer_list<const char *>{what, cargv[0], ": ", why ? why : "error", "\n"}) {
        ssize_t ignored = ::write(STDERR_FILENO, part, ::strlen(part));
        (void)ignored;
      }
    }
    ::_exit(127);
  }
  ::close(gatePipe[0]);
  ::close(errPipe[1]);
  bool attached = gate(pid);
  if (!attached) {
    ::close(gatePipe[1]); // the child sees EOF and exits without exec
    ::close(errPipe[0]);
    ::waitpid(pid, nullptr, 0);
    error = "the worker could not be attached to the contract";
    return -1;
  }
  char go = 1;
  ssize_t w = ::write(gatePipe[1], &go, 1);
  (void)w;
  ::close(gatePipe[1]);
  if (!awaitExec) {
    ::close(errPipe[0]);
    return pid;
  }
  int err = 0;
  ssize_t n;
  do
    n = ::read(errPipe[0], &err, sizeof err);
  while (n < 0 && errno == EINTR);
  ::close(errPipe[0]);
  if (n == sizeof err) {
    ::waitpid(pid, nullptr, 0);
    error = errnoText(err);
    return -1;
  }
  return pid;
}

} // namespace msc::exec
