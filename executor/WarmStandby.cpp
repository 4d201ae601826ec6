#include "executor/WarmStandby.h"

#include "executor/supervise/Fault.h"
#include "support/Diagnostic.h"
#include "support/DiagnosticPrinters.h"

#include <llvm/ADT/StringExtras.h>

#include <cstdio>
#include <cstring>
#include <sys/wait.h>

namespace msc::exec {
namespace {

std::string howItEnded(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "killed by " + signalName(WTERMSIG(status));
}

std::string pidList(const std::vector<pid_t> &pids) {
  std::vector<std::string> text;
  for (pid_t p : pids)
    text.push_back(std::to_string(p));
  return llvm::join(text, ", ");
}

// The device runtime whose placement a variable describes (set by executor/gpu and executor/rdma's
// appliers), or 0 for any other variable.
uint32_t placementRuntime(const std::string &key) {
  if (key == "CUDA_VISIBLE_DEVICES" || key.rfind("MSCALE_GPU_", 0) == 0)
    return mscale::worker::kRuntimeCuda;
  if (key.rfind("MSCALE_RDMA", 0) == 0)
    return mscale::worker::kRuntimeVerbs;
  return 0;
}

const char *runtimeLibrary(uint32_t runtime) {
  return runtime == mscale::worker::kRuntimeCuda ? "libcuda" : "libibverbs";
}

} // namespace

WarmStandby::WarmStandby(Session &session, Logger &log, WorkerGroup &group, AttemptEnvironment attemptEnvironment)
    : session_(session), log_(log), group_(group), attemptEnvironment_(std::move(attemptEnvironment)),
      schedule_(heartbeatIntervalNs(session.plan().fault_tolerance())) {}

bool WarmStandby::enabled() const {
  return session_.plan().fault_tolerance().standby_worker() && !schedule_.off() && group_.hasPages();
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

std::optional<std::string> standbyChanges(const std::map<std::string, std::string> &startedWith,
                                          const std::map<std::string, std::string> &now, bool waiting,
                                          uint32_t loaded, worker::ControlPageHost::Environment &changes) {
  std::vector<std::string> keys;
  for (const auto &[key, value] : now)
    if (auto it = startedWith.find(key); it == startedWith.end() || it->second != value)
      keys.push_back(key);
  for (const auto &[key, value] : startedWith)
    if (!now.count(key))
      keys.push_back(key);
  for (const std::string &key : keys) {
    uint32_t runtime = placementRuntime(key);
    if (key == kInheritedFdsKey || !runtime)
      return "the worker's environment changed (" + key + ")";
    if (!waiting)
      return key + " changed while the standby was still starting";
    if (loaded & runtime)
      return key + " changed and the standby has loaded " + runtimeLibrary(runtime);
    auto it = now.find(key);
    changes.push_back({key, it == now.end() ? std::nullopt : std::optional<std::string>(it->second)});
  }
  return std::nullopt;
}

std::optional<std::string> WarmStandby::stale(uint32_t attempt, bool waiting,
                                              worker::ControlPageHost::Environment &changes) const {
  return standbyChanges(startedWith_, basis(attempt), waiting, group_.standbyRuntimes(), changes);
}

void WarmStandby::tick(uint64_t now, bool steady, uint32_t nextAttempt, const std::vector<std::string> &command) {
  if (!enabled() || command.empty())
    return;
  const std::string &contract = session_.contract();
  if (group_.hasStandby()) {
    if (group_.standbyBeat()) {
      log_.error(contract, "standby worker(s) " + pidList(group_.liveStandbyPids()) +
                               " beat before they had the job: the program does not wait for it "
                               "(mscale::worker::takeOver, msc_worker_take_over); no standby from now on");
      schedule_.refuse();
      group_.discardStandby();
      return;
    }
    if (!group_.standbyWaiting() || !schedule_.checkDue(now))
      return; // one still starting is judged once it waits (or at the restart)
    if (!announced_) {
      announced_ = true;
      log_.info(contract, "standby worker(s) " + pidList(group_.liveStandbyPids()) + " ready: waiting with their " +
                              "state allocated, " + formatMillis(now - group_.standbyStartedNs()) + " after their start");
    }
    worker::ControlPageHost::Environment changes;
    if (std::optional<std::string> why = stale(attempt_, /*waiting=*/true, changes))
      discard(*why);
    return;
  }
  if (!steady || !schedule_.mayStart(now))
    return;
  std::map<std::string, std::string> env = attemptEnvironment_(nextAttempt);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  if (!group_.startStandby(command, env, now, diags)) {
    failed("could not start (" + firstErrorLine(sink) + ")", now);
    return;
  }
  attempt_ = nextAttempt;
  announced_ = false;
  startedWith_ = basis(nextAttempt);
  schedule_.started(now);
}

bool WarmStandby::takeOver(uint32_t attempt, const std::string &restartReason, uint64_t now) {
  if (!group_.hasStandby())
    return false;
  if (attempt != attempt_) {
    discard("it stood by for attempt " + std::to_string(attempt_) + ", not " + std::to_string(attempt));
    return false;
  }
  if (!group_.standbyAlive()) {
    discard("a standby ended before it could take over");
    return false;
  }
  bool waiting = group_.standbyWaiting();
  worker::ControlPageHost::Environment environment;
  if (std::optional<std::string> why = stale(attempt, waiting, environment)) {
    discard(*why);
    return false;
  }
  std::string told;
  for (const auto &[key, value] : environment)
    told += (told.empty() ? "; given the new " : ", ") + key;
  environment.push_back({"MSCALE_RESTART_REASON", restartReason});
  if (!worker::ControlPageHost::fits(environment)) {
    discard("its new environment does not fit the control page");
    return false;
  }
  std::vector<pid_t> pids = group_.liveStandbyPids();
  uint64_t age = now - group_.standbyStartedNs();
  group_.takeOverStandby(environment);
  log_.info(session_.contract(), "standby worker(s) " + pidList(pids) + " took over (started " + formatMillis(age) +
                                     " before, " + (waiting ? "waiting with their state allocated" : "still starting") +
                                     told + ")");
  return true;
}

bool WarmStandby::exited(pid_t pid, int status, uint64_t now) {
  std::optional<bool> asked = group_.standbyExited(pid);
  if (!asked)
    return false;
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
  StandbySchedule::Failure f = schedule_.failed(now);
  std::string next = f.off ? "no standby from now on (" + std::to_string(f.failures) + " failures)"
                           : "another in " + formatMillis(f.retryInNs);
  log_.warn(session_.contract(), "standby " + what + "; " + next);
}

} // namespace msc::exec
