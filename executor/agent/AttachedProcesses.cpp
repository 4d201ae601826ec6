#include "executor/agent/AttachedProcesses.h"

#include "executor/Supervisor.h"
#include "executor/ProcessTree.h"
#include "executor/supervise/Liveness.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace msc::exec {

namespace {

bool exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

} // namespace

AttachedProcesses::AttachedProcesses(const plan::FaultTolerance &ft)
    : heartbeatNs_(heartbeatIntervalNs(ft)), hangAfterNs_(hangBudgetNs(ft)), sampleNs_(beatSampleIntervalNs(ft)),
      misses_(heartbeatMisses(ft)) {}

AttachedProcesses::~AttachedProcesses() {
  while (!processes_.empty())
    forget(processes_.size() - 1);
}

void AttachedProcesses::forget(size_t index) {
  Process &p = processes_[index];
  if (p.pidfd >= 0)
    ::close(p.pidfd);
  processes_.erase(processes_.begin() + static_cast<std::ptrdiff_t>(index));
}

std::optional<std::vector<HandedFd>> AttachedProcesses::attach(pid_t pid, uint64_t nowNs, std::string &error) {
  auto same = std::find_if(processes_.begin(), processes_.end(), [&](const Process &p) { return p.pid == pid; });
  if (same != processes_.end())
    forget(static_cast<size_t>(same - processes_.begin()));
  if (processes_.size() >= kMaxProcesses) {
    error = "the contract already watches " + std::to_string(kMaxProcesses) + " attached processes";
    return std::nullopt;
  }
  Process p;
  p.pid = pid;
  p.lastBeatNs = nowNs;
  p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (p.pidfd < 0) {
    error = std::string("pidfd_open: ") + std::strerror(errno);
    return std::nullopt;
  }
  // The pidfd is the agent's own: no fd of it may leak into the workers it
  // starts.
  ::fcntl(p.pidfd, F_SETFD, FD_CLOEXEC);
  std::string why;
  p.control = worker::ControlPageHost::create(why);
  if (!p.control) {
    ::close(p.pidfd);
    error = why;
    return std::nullopt;
  }
  std::vector<HandedFd> fds = {{"MSCALE_CONTROL_FD", p.control->fd()}};
  processes_.push_back(std::move(p));
  return fds;
}

void AttachedProcesses::detach(pid_t pid) {
  for (size_t i = 0; i < processes_.size(); ++i)
    if (processes_[i].pid == pid)
      return forget(i);
}

std::vector<AttachedProcesses::Event> AttachedProcesses::tick(uint64_t nowNs) {
  std::vector<Event> events;
  for (size_t i = 0; i < processes_.size();) {
    Process &p = processes_[i];
    if (exited(p.pidfd)) {
      if (!p.killed)
        events.push_back(
            {p.pid, false,
             "attached process " + std::to_string(p.pid) + " ended at step " + std::to_string(p.control->step())});
      forget(i);
      continue;
    }
    ++i;
    uint64_t beats = p.control->beats();
    if (beats != p.lastBeats) {
      p.lastBeats = beats;
      p.lastBeatNs = nowNs;
    }
    if (p.killed || p.lastBeats == 0)
      continue; // silence before the first beat is start-up, as for the agent's
                // own workers
    uint64_t silence = nowNs - p.lastBeatNs;
    if (!silentTooLong(silence, hangAfterNs_, p.control->finishing(), [&] { return processExiting(p.pid); }))
      continue;
    // The pidfd names this process and no other, even if its pid were reused.
    ::syscall(SYS_pidfd_send_signal, p.pidfd, SIGKILL, nullptr, 0);
    p.killed = true;
    events.push_back({p.pid, true,
                      "attached process " + std::to_string(p.pid) + " hung: no heartbeat for " + formatMillis(silence) + " (" +
                          std::to_string(misses_) + " heartbeats " + formatMillis(heartbeatNs_) + " apart) after step " +
                          std::to_string(p.control->step()) + "; SIGKILL, so that its launcher ends it"});
  }
  return events;
}

uint64_t AttachedProcesses::nextWakeNs(uint64_t nowNs) const {
  return processes_.empty() ? UINT64_MAX : nowNs + sampleNs_;
}

} // namespace msc::exec
