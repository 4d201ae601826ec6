#include "executor/WorkerGroup.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace msc::exec {

std::optional<uint16_t> freeLoopbackPort(uint16_t avoid, std::string &error) {
  // The kernel's ephemeral choice is random enough that a second try almost never repeats; a few
  // tries keep `avoid` out for certain without a port range of our own to manage.
  for (int attempt = 0; attempt < 8; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = std::string("socket: ") + std::strerror(errno);
      return std::nullopt;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0) {
      error = std::string("bind 127.0.0.1:0: ") + std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    ::close(fd);
    uint16_t port = ntohs(addr.sin_port);
    if (port != avoid)
      return port;
  }
  error = "the kernel kept offering port " + std::to_string(avoid);
  return std::nullopt;
}

WorkerGroup::WorkerGroup(WorkerHost &host, unsigned size, bool rankEnvironment)
    : host_(host), rankEnvironment_(rankEnvironment) {
  ranks_.resize(std::max(1u, size));
  for (unsigned r = 0; r < ranks_.size(); ++r)
    ranks_[r].index = r;
}

WorkerGroup::~WorkerGroup() {
  discardStandby(); // a standby must not outlive the job it stands by for
  reapDiscardedStandbys();
  for (Rank &r : ranks_)
    if (r.memoryTierFd >= 0)
      ::close(r.memoryTierFd);
}

void WorkerGroup::prepare(bool memoryTier, std::vector<std::string> &warnings) {
  for (Rank &r : ranks_) {
    // One rank's name in a warning only where there are several (the single worker's lines stay).
    std::string whose = ranks_.size() > 1 ? " for rank " + std::to_string(r.index) : std::string();
    std::string error;
    if (!r.control) {
      r.control = worker::ControlPageHost::create(error);
      if (!r.control)
        warnings.push_back("no worker control page" + whose + " (" + error +
                           "): worker heartbeats and slice hand-over notices are off");
    }
    if (memoryTier && r.memoryTierFd < 0) {
      std::string name = ranks_.size() > 1 ? "mscale-snapshots-rank-" + std::to_string(r.index) : "mscale-snapshots";
      r.memoryTierFd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
      if (r.memoryTierFd < 0)
        warnings.push_back("no in-memory snapshot tier" + whose + ": memfd_create: " + std::strerror(errno));
    }
  }
}

bool WorkerGroup::start(const std::vector<std::string> &command, const std::map<std::string, std::string> &env,
                        DiagnosticEngine &diags) {
  stopDeadlineNs_ = UINT64_MAX;
  if (rankEnvironment_ && !newMasterPort(command, "MASTER_PORT", masterPort_, diags))
    return false;
  for (Rank &r : ranks_) {
    r.pid = -1;
    r.status.reset();
    if (r.control)
      r.control->resetForNewWorker();
    std::vector<int> fds;
    std::map<std::string, std::string> rankEnv = rankVariables(r, r.control.get(), masterPort_, env, fds);
    std::string label = ranks_.size() > 1 ? "rank " + std::to_string(r.index) : std::string();
    r.pid = host_.start(command, rankEnv, fds, label, diags);
    if (r.pid <= 0) {
      r.pid = -1;
      signalAll(SIGKILL); // a job without one of its ranks would only wait for it in its first collective
      return false;
    }
  }
  return true;
}

bool WorkerGroup::newMasterPort(const std::vector<std::string> &command, const char *what, uint16_t &port,
                                DiagnosticEngine &diags) const {
  std::string error;
  std::optional<uint16_t> free = freeLoopbackPort(masterPort_, error);
  if (!free) {
    diags.report(DiagCode::ERR_EXEC_009) << (command.empty() ? std::string() : command[0])
                                         << std::string("no free loopback port for ") + what + ": " + error;
    return false;
  }
  port = *free;
  return true;
}

std::map<std::string, std::string> WorkerGroup::rankVariables(const Rank &r, const worker::ControlPageHost *page,
                                                              uint16_t port,
                                                              const std::map<std::string, std::string> &env,
                                                              std::vector<int> &fds) const {
  std::map<std::string, std::string> rankEnv = env;
  if (page) {
    rankEnv["MSCALE_CONTROL_FD"] = std::to_string(page->fd());
    fds.push_back(page->fd());
  }
  if (r.memoryTierFd >= 0) {
    rankEnv["MSCALE_SNAPSHOT_MEMFD"] = std::to_string(r.memoryTierFd);
    fds.push_back(r.memoryTierFd);
  }
  if (rankEnvironment_) {
    // What torchrun --nproc-per-node exports (one node: local rank = rank), and the same under
    // MSCALE_ names for code that must not mistake another launcher's variables for ours.
    std::string rank = std::to_string(r.index), world = std::to_string(ranks_.size());
    for (const char *name : {"RANK", "LOCAL_RANK", "MSCALE_RANK"})
      rankEnv[name] = rank;
    for (const char *name : {"WORLD_SIZE", "LOCAL_WORLD_SIZE", "MSCALE_WORLD_SIZE"})
      rankEnv[name] = world;
    rankEnv["MASTER_ADDR"] = "127.0.0.1";
    rankEnv["MASTER_PORT"] = std::to_string(port);
  }
  return rankEnv;
}

bool WorkerGroup::startStandby(const std::vector<std::string> &command, const std::map<std::string, std::string> &env,
                               uint64_t nowNs, DiagnosticEngine &diags) {
  discardStandby();
  // The standbys' attempt rendezvouses on a port of its own: the running attempt holds masterPort_.
  if (rankEnvironment_ && !newMasterPort(command, "the standby's MASTER_PORT", standbyMasterPort_, diags))
    return false;
  std::map<std::string, std::string> standbyEnv = env;
  standbyEnv["MSCALE_STANDBY"] = "1";
  standbyStartedNs_ = nowNs;
  for (const Rank &r : ranks_) {
    Standby s;
    if (!sparePages_.empty()) {
      s.control = std::move(sparePages_.back());
      sparePages_.pop_back();
    } else {
      std::string error;
      s.control = worker::ControlPageHost::create(error);
      if (!s.control) {
        diags.report(DiagCode::ERR_EXEC_009) << (command.empty() ? std::string() : command[0])
                                             << "no control page for a standby: " + error;
        discardStandby();
        return false;
      }
    }
    s.control->resetForNewWorker();
    std::vector<int> fds;
    std::map<std::string, std::string> rankEnv = rankVariables(r, s.control.get(), standbyMasterPort_, standbyEnv, fds);
    std::string label = ranks_.size() > 1 ? "standby of rank " + std::to_string(r.index) : std::string("standby");
    s.pid = host_.start(command, rankEnv, fds, label, diags);
    bool started = s.pid > 0;
    // Its start-up runs on CPU time the job leaves idle: a standby must never slow the worker it
    // stands by for (a starved worker misses heartbeats). Its threads and children inherit this.
    if (started)
      host_.setScheduling(s.pid, SCHED_IDLE, 0);
    standbys_.push_back(std::move(s));
    if (!started) {
      standbys_.back().pid = -1;
      discardStandby();
      return false;
    }
  }
  return true;
}

bool WorkerGroup::standbyWaiting() const {
  return hasStandby() &&
         std::all_of(standbys_.begin(), standbys_.end(), [](const Standby &s) { return s.control->standbyWaiting(); });
}

bool WorkerGroup::standbyBeat() const {
  return std::any_of(standbys_.begin(), standbys_.end(), [](const Standby &s) { return s.control->beats() != 0; });
}

uint32_t WorkerGroup::standbyRuntimes() const {
  uint32_t runtimes = 0;
  for (const Standby &s : standbys_)
    runtimes |= s.control->standbyRuntimes();
  return runtimes;
}

void WorkerGroup::takeOverStandby(const worker::ControlPageHost::Environment &environment) {
  stopDeadlineNs_ = UINT64_MAX;
  for (unsigned i = 0; i < ranks_.size(); ++i) {
    Rank &r = ranks_[i];
    Standby &s = standbys_[i];
    if (r.control) {
      s.control->continueFrom(*r.control);
      sparePages_.push_back(std::move(r.control));
    }
    r.control = std::move(s.control);
    r.pid = s.pid;
    r.status.reset();
  }
  standbys_.clear();
  if (rankEnvironment_)
    masterPort_ = standbyMasterPort_;
  // Workers run as the executor does (they inherit its scheduling when started cold).
  sched_param own{};
  int policy = ::sched_getscheduler(0);
  ::sched_getparam(0, &own);
  for (Rank &r : ranks_)
    host_.setScheduling(r.pid, policy < 0 ? SCHED_OTHER : policy, own.sched_priority);
  // Every page is in place before any rank runs: ranks rendezvous as soon as they have the job.
  for (Rank &r : ranks_)
    r.control->handOverToStandby(environment);
}

void WorkerGroup::discardStandby() {
  // The whole tree: a child the standby started (a loader, a compile worker) holds its page and the
  // memory tier, and would otherwise wait on the page and be woken with the page's next standby.
  std::vector<pid_t> roots = liveStandbyPids();
  roots.erase(std::remove(roots.begin(), roots.end(), pid_t(-1)), roots.end());
  host_.killTrees(roots);
  endingStandbys_.insert(endingStandbys_.end(), roots.begin(), roots.end());
  for (Standby &s : standbys_)
    if (s.control)
      sparePages_.push_back(std::move(s.control));
  standbys_.clear();
}

void WorkerGroup::reapDiscardedStandbys() {
  for (pid_t pid : std::exchange(endingStandbys_, {})) {
    host_.reap(pid);
    host_.exited(pid);
  }
}

bool WorkerGroup::standbyAlive() const {
  for (const Standby &s : standbys_)
    if (host_.ended(s.pid)) // looks without reaping: the end is still reported to whoever reaps
      return false;
  return hasStandby();
}

std::vector<pid_t> WorkerGroup::standbyPids() const {
  std::vector<pid_t> out = endingStandbys_;
  for (const Standby &s : standbys_)
    if (s.pid > 0)
      out.push_back(s.pid);
  return out;
}

std::vector<pid_t> WorkerGroup::liveStandbyPids() const {
  std::vector<pid_t> out;
  for (const Standby &s : standbys_)
    out.push_back(s.pid);
  return out;
}

std::optional<bool> WorkerGroup::standbyExited(pid_t pid) {
  if (pid <= 0)
    return std::nullopt;
  if (auto it = std::find(endingStandbys_.begin(), endingStandbys_.end(), pid); it != endingStandbys_.end()) {
    endingStandbys_.erase(it);
    host_.exited(pid);
    return true;
  }
  for (Standby &s : standbys_)
    if (s.pid == pid) {
      s.pid = -1; // reaped: not to be killed again
      host_.exited(pid);
      discardStandby();
      return false;
    }
  return std::nullopt;
}

std::optional<unsigned> WorkerGroup::exited(pid_t pid, int waitStatus) {
  for (Rank &r : ranks_)
    if (pid > 0 && r.pid == pid) {
      r.pid = -1;
      r.status = waitStatus;
      host_.exited(pid);
      return r.index;
    }
  return std::nullopt;
}

void WorkerGroup::stop(std::optional<unsigned> killNow, uint64_t deadlineNs) {
  for (Rank &r : ranks_)
    if (r.pid > 0)
      host_.signal(r.pid, killNow && *killNow == r.index ? SIGKILL : SIGTERM);
  stopDeadlineNs_ = deadlineNs;
}

bool WorkerGroup::graceExpired(uint64_t nowNs) {
  if (nowNs < stopDeadlineNs_)
    return false;
  stopDeadlineNs_ = UINT64_MAX;
  return running();
}

void WorkerGroup::signalAll(int sig) {
  for (Rank &r : ranks_)
    if (r.pid > 0)
      host_.signal(r.pid, sig);
}

bool WorkerGroup::running() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank &r) { return r.pid > 0; });
}

std::vector<pid_t> WorkerGroup::runningPids() const {
  std::vector<pid_t> out;
  for (const Rank &r : ranks_)
    if (r.pid > 0)
      out.push_back(r.pid);
  return out;
}

bool WorkerGroup::allCompleted() const {
  return std::all_of(ranks_.begin(), ranks_.end(), [](const Rank &r) {
    return r.status && WIFEXITED(*r.status) && WEXITSTATUS(*r.status) == 0;
  });
}

int WorkerGroup::failingStatus(std::optional<unsigned> preferred) const {
  auto code = [](int s) { return WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s); };
  if (preferred && *preferred < ranks_.size() && ranks_[*preferred].status)
    return code(*ranks_[*preferred].status);
  for (const Rank &r : ranks_)
    if (r.status && code(*r.status) != 0)
      return code(*r.status);
  return 0;
}

unsigned WorkerGroup::ranks() const { return size(); }

std::optional<uint64_t> WorkerGroup::beats(unsigned r) const {
  if (r >= ranks_.size() || ranks_[r].pid <= 0 || !ranks_[r].control)
    return std::nullopt;
  return ranks_[r].control->beats();
}

WorkerGroup::SaidFailure WorkerGroup::failureSaid(unsigned r) const {
  if (r >= ranks_.size() || !ranks_[r].control)
    return {};
  return {ranks_[r].control->failure(), ranks_[r].control->failureLine()};
}

bool WorkerGroup::finishing(unsigned r) const {
  return r < ranks_.size() && ranks_[r].control && ranks_[r].control->finishing();
}

bool WorkerGroup::exiting(unsigned r) const {
  return r < ranks_.size() && ranks_[r].pid > 0 && host_.exiting(ranks_[r].pid);
}

bool WorkerGroup::hasPages() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank &r) { return r.control != nullptr; });
}

uint64_t WorkerGroup::step(std::optional<unsigned> rank) const {
  if (rank)
    return *rank < ranks_.size() && ranks_[*rank].control ? ranks_[*rank].control->step() : 0;
  std::optional<uint64_t> lowest;
  for (const Rank &r : ranks_) {
    if (!r.control)
      continue;
    uint64_t s = r.control->step();
    if (s == mscale::worker::kStepRestoring)
      return s;
    lowest = std::min(lowest.value_or(s), s);
  }
  return lowest.value_or(0);
}

std::optional<uint64_t> WorkerGroup::commonStep() const {
  if (!hasPages())
    return std::nullopt;
  for (const Rank &r : ranks_)
    if (r.control && r.control->beats() == 0)
      return std::nullopt;
  return step(std::nullopt);
}

void WorkerGroup::requestStopAfter(uint64_t step) {
  for (Rank &r : ranks_)
    if (r.control)
      r.control->requestStopAfter(step);
}

std::optional<uint64_t> WorkerGroup::stoppedAt() const {
  if (!hasPages())
    return std::nullopt;
  std::optional<uint64_t> at;
  for (const Rank &r : ranks_) {
    uint64_t s = r.control ? r.control->stoppedAt() : 0;
    if (!s || (at && *at != s))
      return std::nullopt;
    at = s;
  }
  return at;
}

double WorkerGroup::reportedTflops() const {
  double sum = 0;
  for (const Rank &r : ranks_)
    if (r.control)
      sum += r.control->reportedTflops();
  return sum;
}

uint64_t WorkerGroup::publishSlices(const std::string &slices) {
  uint64_t generation = 0;
  for (Rank &r : ranks_)
    if (r.control)
      generation = r.control->publishSlices(slices);
  return generation;
}

bool WorkerGroup::acknowledged(uint64_t generation) const {
  // A rank that has ended takes no notice any more; once none runs, the last word of each counts.
  bool anyRunning = running(), any = false;
  for (const Rank &r : ranks_) {
    if (!r.control || (anyRunning && r.pid <= 0))
      continue;
    if (!r.control->acknowledged(generation))
      return false;
    any = true;
  }
  return any;
}

} // namespace msc::exec
