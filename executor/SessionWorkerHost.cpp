#include "executor/SessionWorkerHost.h"

#include "executor/ProcessTree.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

namespace msc::exec {

pid_t SessionWorkerHost::start(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
                               const std::vector<int> &fds, const std::string &label, DiagnosticEngine &diags) {
  if (!output_)
    return session_.startWorkerProcess(argv, env, diags, fds, label);
  auto number = [&](const char *name) {
    auto it = env.find(name);
    return it == env.end() ? 0u : unsigned(std::strtoul(it->second.c_str(), nullptr, 10));
  };
  std::string error;
  int out = output_->open(number("MSCALE_RANK"), number("MSCALE_ATTEMPT"), env.count("MSCALE_STANDBY") != 0, error);
  if (out < 0) // the worker still runs; what it prints goes where the executor's own output goes
    session_.log().warn(session_.contract(), "worker output not kept: " + error);
  pid_t pid = session_.startWorkerProcess(argv, env, diags, fds, label, out);
  if (out >= 0)
    ::close(out);
  return pid;
}

void SessionWorkerHost::signal(pid_t pid, int sig) {
  if (pid > 0)
    ::kill(pid, sig);
}

void SessionWorkerHost::killWorkers(const std::vector<pid_t> &sparing) { session_.killWorkerTree(sparing); }

void SessionWorkerHost::killTrees(const std::vector<pid_t> &roots) {
  if (!roots.empty())
    killProcessTree(roots);
}

bool SessionWorkerHost::ended(pid_t pid) const {
  siginfo_t info{};
  return pid <= 0 || ::waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != 0;
}

bool SessionWorkerHost::exiting(pid_t pid) const { return pid > 0 && processExiting(pid); }

void SessionWorkerHost::reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void SessionWorkerHost::setScheduling(pid_t pid, int policy, int priority) {
  setProcessScheduling(pid, policy, priority);
}

void SessionWorkerHost::exited(pid_t pid) { session_.workerExited(pid); }

} // namespace msc::exec
