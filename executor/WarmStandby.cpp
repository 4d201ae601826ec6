#include "executor/WarmStandby.h"

#include "executor/Supervisor.h"
#include "support/Diagnostic.h"
#include "support/DiagnosticPrinters.h"

#include <llvm/ADT/StringExtras.h>

#include <cstdio>
#include <cstring>
#include <sys/wait.h>

namespace msc::exec {
namespace {

std::string millis(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", double(ns) / 1e6);
  return buf;
}

std::string howItEnded(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  const char *name = sigabbrev_np(WTERMSIG(status));
  return std::string("killed by SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
}

std::string pidList(const std::vector<pid_t> &pids) {
  std::vector<std::string> text;
  for (pid_t p : pids)
    text.push_back(std::to_string(p));
  return llvm::join(text, ", ");
}

// The first variable that differs between two environments, for the log.
std::string firstDifference(const std::map<std::string, std::string> &was, const std::map<std::string, std::string> &now) {
  for (const auto &[key, value] : now) {
    auto it = was.find(key);
    if (it == was.end() || it->second != value)
      return key;
  }
  for (const auto &[key, value] : was)
    if (!now.count(key))
      return key;
  return "nothing";
}

constexpr const char *kInheritedFdsKey = "(inherited fds)";

} // namespace

WarmStandby::WarmStandby(Session &session, Logger &log, WorkerGroup &group, AttemptEnvironment attemptEnvironment)
    : session_(session), log_(log), group_(group), attemptEnvironment_(std::move(attemptEnvironment)) {}

bool WarmStandby::enabled() const {
  return session_.plan().fault_tolerance().standby_worker() && !off_ && group_.hasPages();
}

std::map<std::string, std::string> WarmStandby::basis(uint32_t attempt) const {
  const WorkerEnvironment &applied = session_.environment();
  std::map<std::string, std::string> out = applied.variables;
  for (auto &[key, value] : attemptEnvironment_(attempt))
    out[key] = value;
  std::string fds;
  for (int fd : applied.inheritedFds)
    fds += std::to_string(fd) + " ";
  out[kInheritedFdsKey] = fds;
  return out;
}

void WarmStandby::tick(uint64_t now, bool steady, uint32_t nextAttempt, const std::vector<std::string> &command,
                       const RankLauncher &launch) {
  if (!enabled() || command.empty())
    return;
  const std::string &contract = session_.contract();
  if (group_.hasStandby()) {
    if (group_.standbyBeat()) {
      log_.error(contract, "standby worker(s) " + pidList(group_.liveStandbyPids()) +
                               " beat before they had the job: the program does not wait for it "
                               "(mscale::worker::takeOver, msc_worker_take_over); no standby from now on");
      off_ = true;
      group_.discardStandby();
      return;
    }
    if (now < nextCheckNs_)
      return;
    nextCheckNs_ = now + heartbeatIntervalNs(session_.plan().fault_tolerance());
    std::map<std::string, std::string> current = basis(attempt_);
    if (current != startedWith_)
      discard("the worker's environment changed (" + firstDifference(startedWith_, current) + ")");
    return;
  }
  if (!steady || now < retryAtNs_)
    return;
  std::map<std::string, std::string> env = attemptEnvironment_(nextAttempt);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  if (!group_.startStandby(command, env, launch, now, diags)) {
    failed("could not start (" + firstErrorLine(sink) + ")", now);
    return;
  }
  attempt_ = nextAttempt;
  startedWith_ = basis(nextAttempt);
  nextCheckNs_ = now + heartbeatIntervalNs(session_.plan().fault_tolerance());
}

bool WarmStandby::takeOver(uint32_t attempt, const std::string &restartReason, uint64_t now) {
  if (!group_.hasStandby())
    return false;
  if (attempt != attempt_) {
    discard("it stood by for attempt " + std::to_string(attempt_) + ", not " + std::to_string(attempt));
    return false;
  }
  std::map<std::string, std::string> current = basis(attempt);
  if (current != startedWith_) {
    discard("the worker's environment changed (" + firstDifference(startedWith_, current) + ")");
    return false;
  }
  std::vector<pid_t> pids = group_.liveStandbyPids();
  bool waiting = group_.standbyWaiting();
  uint64_t age = now - group_.standbyStartedNs();
  group_.takeOverStandby(restartReason, now);
  log_.info(session_.contract(), "standby worker(s) " + pidList(pids) + " took over (started " + millis(age) +
                                     " before, " + (waiting ? "waiting with their state allocated" : "still starting") +
                                     ")");
  return true;
}

bool WarmStandby::exited(pid_t pid, int status, uint64_t now) {
  std::optional<bool> asked = group_.standbyExited(pid);
  if (!asked)
    return false;
  session_.workerExited(pid);
  if (!*asked)
    failed("worker " + std::to_string(pid) + " " + howItEnded(status) + " before it was needed", now);
  return true;
}

void WarmStandby::discard(const std::string &why) {
  if (!group_.hasStandby())
    return;
  log_.info(session_.contract(), "standby worker(s) " + pidList(group_.liveStandbyPids()) + " discarded: " + why);
  group_.discardStandby();
}

void WarmStandby::failed(const std::string &what, uint64_t now) {
  ++failures_;
  // Backing off by heartbeats keeps a standby that dies at start-up from forking in a loop.
  uint64_t wait = uint64_t(failures_) * 10 * heartbeatIntervalNs(session_.plan().fault_tolerance());
  retryAtNs_ = now + wait;
  std::string next = failures_ >= kMaxStandbyFailures
                         ? "no standby from now on (" + std::to_string(failures_) + " failures)"
                         : "another in " + millis(wait);
  off_ = failures_ >= kMaxStandbyFailures;
  log_.warn(session_.contract(), "standby " + what + "; " + next);
}

} // namespace msc::exec
