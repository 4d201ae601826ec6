#include "bpf/InterposerTrace.h"

#include "bpf/InterposerCounters.h"
#include "interposer/cuda_counters.h"

#include <llvm/ADT/StringRef.h>

#include <cerrno>
#include <map>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace msc::trace {
namespace {

// A fresh directory for the command's counters files, removed with them.
struct TemporaryDir {
  std::string path;
  ~TemporaryDir() {
    if (path.empty())
      return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Runs the command with the interposer preloaded (ahead of any LD_PRELOAD it already has) and
// waits for it; its exit status, or nullopt with ERR_TRACE_012 when it cannot be started.
std::optional<int> runPreloaded(const TraceOptions &options, const std::string &countersDir,
                                const std::function<bool()> &stop, DiagnosticEngine &diags) {
  int execErr[2];
  if (::pipe2(execErr, O_CLOEXEC) != 0) {
    diags.report(DiagCode::ERR_TRACE_012) << options.command[0] << std::strerror(errno);
    return std::nullopt;
  }
  std::string preload = options.interposerPath;
  if (const char *old = std::getenv("LD_PRELOAD"); old && *old)
    preload += std::string(":") + old;
  std::vector<char *> argv;
  for (const std::string &a : options.command)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  // The child's environment is made before fork: between fork and exec only async-signal-safe calls.
  const std::map<std::string, std::string> ours = {
      {"LD_PRELOAD", preload},
      {MSC_COUNTERS_DIR_ENV, countersDir},
      {MSC_COUNTERS_MODE_ENV, options.timeAll ? "latency" : "count"}};
  std::vector<std::string> envStrings;
  for (char **e = environ; *e; ++e) {
    llvm::StringRef entry(*e);
    if (!ours.count(entry.split('=').first.str()))
      envStrings.push_back(entry.str());
  }
  for (const auto &[name, value] : ours)
    envStrings.push_back(name + "=" + value);
  std::vector<char *> envp;
  for (std::string &e : envStrings)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    diags.report(DiagCode::ERR_TRACE_012) << options.command[0] << std::strerror(errno);
    ::close(execErr[0]);
    ::close(execErr[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(execErr[0]);
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = ::write(execErr[1], &e, sizeof(e));
    (void)ignored;
    ::_exit(127);
  }
  ::close(execErr[1]);
  int execErrno = 0;
  bool failed = ::read(execErr[0], &execErrno, sizeof(execErrno)) == sizeof(execErrno);
  ::close(execErr[0]);
  int status = 0;
  if (failed) {
    ::waitpid(pid, &status, 0);
    diags.report(DiagCode::ERR_TRACE_012) << options.command[0] << std::strerror(execErrno);
    return std::nullopt;
  }
  // Stopping (SIGINT to the tracer) forwards SIGTERM once and keeps waiting: the counters are
  // complete only when the command is gone.
  bool signalled = false;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (!signalled && stop && stop()) {
      ::kill(pid, SIGTERM);
      signalled = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

} // namespace

std::optional<TraceResults> runInterposerTrace(const TraceOptions &options, DiagnosticEngine &diags,
                                               const std::function<bool()> &stop) {
  TraceResults results;
  auto started = std::chrono::steady_clock::now();
  auto elapsedNs = [&] {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
  };
  if (!options.command.empty()) {
    if (::access(options.interposerPath.c_str(), R_OK) != 0) {
      diags.report(DiagCode::ERR_TRACE_014) << options.interposerPath << std::strerror(errno);
      return std::nullopt;
    }
    TemporaryDir dir;
    if (options.countersDir.empty()) {
      const char *tmp = std::getenv("TMPDIR");
      std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/mscale-trace-counters.XXXXXX";
      if (!::mkdtemp(templ.data())) {
        diags.report(DiagCode::ERR_TRACE_013) << templ << std::strerror(errno);
        return std::nullopt;
      }
      dir.path = templ;
    }
    const std::string &countersDir = options.countersDir.empty() ? dir.path : options.countersDir;
    std::optional<CounterReading> before;
    if (!options.countersDir.empty() && !(before = readCounters(countersDir, options.pids, diags)))
      return std::nullopt;
    std::optional<int> status = runPreloaded(options, countersDir, stop, diags);
    if (!status)
      return std::nullopt;
    results.durationNs = elapsedNs();
    results.commandExitStatus = *status;
    std::optional<CounterReading> after = readCounters(countersDir, options.pids, diags);
    if (!after)
      return std::nullopt;
    fillResults(before ? subtract(*after, *before) : *after, options.interposerPath, results);
    return results;
  }

  std::optional<CounterReading> before = readCounters(options.countersDir, options.pids, diags);
  if (!before)
    return std::nullopt;
  if (options.duration.count() == 0) { // no window: everything since each process started
    fillResults(*before, options.interposerPath, results);
    return results;
  }
  auto deadline = started + options.duration;
  while (std::chrono::steady_clock::now() < deadline && !(stop && stop()))
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        std::chrono::milliseconds(50), deadline - std::chrono::steady_clock::now()));
  std::optional<CounterReading> after = readCounters(options.countersDir, options.pids, diags);
  if (!after)
    return std::nullopt;
  results.durationNs = elapsedNs();
  fillResults(subtract(*after, *before), options.interposerPath, results);
  return results;
}

} // namespace msc::trace
