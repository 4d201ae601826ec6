#include "executor/supervise/SimWorkerHost.h"

#include <algorithm>
#include <cstring>
#include <csignal>
#include <sys/mman.h>

namespace msc::exec {

namespace {
int signalledStatus(int sig) { return sig & 0x7f; }
int exitedStatus(int code) { return (code & 0xff) << 8; }
} // namespace

SimWorkerHost::~SimWorkerHost() {
  for (Worker &w : workers_)
    if (w.page)
      ::munmap(w.page, 4096);
}

pid_t SimWorkerHost::start(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
                           const std::vector<int> &fds, const std::string &label, DiagnosticEngine &diags) {
  if (std::exchange(failNextStart_, false)) {
    diags.report(DiagCode::ERR_EXEC_009) << (argv.empty() ? std::string() : argv[0]) << "the model refused to start it";
    return -1;
  }
  Worker w;
  w.pid = nextPid_++;
  w.argv = argv;
  w.env = env;
  w.label = label;
  if (auto it = env.find("MSCALE_CONTROL_FD"); it != env.end()) {
    void *p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, std::stoi(it->second), 0);
    if (p != MAP_FAILED)
      w.page = static_cast<mscale::worker::ControlPage *>(p);
  }
  workers_.push_back(std::move(w));
  return workers_.back().pid;
}

SimWorkerHost::Worker *SimWorkerHost::find(pid_t pid) {
  auto it = std::find_if(workers_.begin(), workers_.end(), [&](const Worker &w) { return w.pid == pid; });
  return it == workers_.end() ? nullptr : &*it;
}

void SimWorkerHost::end(Worker &w, int status) {
  if (w.status)
    return;
  w.status = status;
  endOrder_.push_back(w.pid);
}

void SimWorkerHost::signal(pid_t pid, int sig) {
  Worker *w = find(pid);
  if (!w || w->status)
    return;
  w->signals.push_back(sig);
  if (sig == SIGTERM && w->ignoresSigterm)
    return;
  if (sig == SIGKILL || sig == SIGTERM || sig == SIGINT)
    end(*w, signalledStatus(sig));
}

void SimWorkerHost::killWorkers(const std::vector<pid_t> &sparing) {
  for (Worker &w : workers_)
    if (!w.status && std::find(sparing.begin(), sparing.end(), w.pid) == sparing.end()) {
      w.signals.push_back(SIGKILL);
      end(w, signalledStatus(SIGKILL));
    }
}

void SimWorkerHost::killTrees(const std::vector<pid_t> &roots) {
  for (pid_t pid : roots)
    signal(pid, SIGKILL);
}

bool SimWorkerHost::ended(pid_t pid) const {
  auto it = std::find_if(workers_.begin(), workers_.end(), [&](const Worker &w) { return w.pid == pid; });
  return it == workers_.end() || it->status.has_value();
}

void SimWorkerHost::reap(pid_t pid) {
  if (Worker *w = find(pid)) {
    end(*w, signalledStatus(SIGKILL)); // only killed workers are reaped this way
    w->reported = true;
  }
}

void SimWorkerHost::setScheduling(pid_t pid, int policy, int) {
  if (Worker *w = find(pid))
    w->policy = policy;
}

void SimWorkerHost::exited(pid_t pid) {
  if (Worker *w = find(pid))
    w->reported = true;
}

void SimWorkerHost::beat(pid_t pid, uint64_t step) {
  Worker *w = find(pid);
  if (!w || w->status || !w->page)
    return;
  w->page->step.store(step, std::memory_order_relaxed);
  w->page->beats.fetch_add(1, std::memory_order_release);
}

void SimWorkerHost::sayFailed(pid_t pid, mscale::worker::Failure kind, const std::string &line) {
  Worker *w = find(pid);
  if (!w || w->status || !w->page)
    return;
  size_t n = std::min(line.size(), sizeof w->page->failureLine - 1);
  std::memcpy(w->page->failureLine, line.data(), n);
  w->page->failureLine[n] = 0;
  w->page->failure.store(static_cast<uint32_t>(kind), std::memory_order_release);
}

void SimWorkerHost::exit(pid_t pid, int code) {
  if (Worker *w = find(pid))
    end(*w, exitedStatus(code));
}

std::vector<std::pair<pid_t, int>> SimWorkerHost::takeEnds() {
  std::vector<std::pair<pid_t, int>> out;
  for (pid_t pid : std::exchange(endOrder_, {})) {
    Worker *w = find(pid);
    if (!w || w->reported)
      continue;
    w->reported = true;
    out.emplace_back(pid, *w->status);
  }
  return out;
}

std::vector<pid_t> SimWorkerHost::running() const {
  std::vector<pid_t> out;
  for (const Worker &w : workers_)
    if (!w.status)
      out.push_back(w.pid);
  return out;
}

} // namespace msc::exec
