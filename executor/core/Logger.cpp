#include "executor/core/Logger.h"

#include "support/DiagnosticPrinters.h"

#include <llvm/Support/raw_ostream.h>

#include <llvm/Support/Format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

namespace msc::exec {

std::string formatMillis(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", double(ns) / 1e6);
  return buf;
}

bool stderrIsJournal() {
  const char *env = std::getenv("JOURNAL_STREAM");
  unsigned long long dev = 0, ino = 0;
  if (!env || std::sscanf(env, "%llu:%llu", &dev, &ino) != 2)
    return false;
  struct stat st;
  return fstat(STDERR_FILENO, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

Logger::Logger(std::string tool, bool toStderr)
    : tool_(std::move(tool)), stderr_(toStderr), journal_(toStderr && stderrIsJournal()) {}

Logger::~Logger() {
  if (file_)
    std::fclose(file_);
}

bool Logger::openFile(const std::string &path, std::string &error) {
  FILE *f = std::fopen(path.c_str(), "ae");
  if (!f) {
    error = std::strerror(errno);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (file_)
    std::fclose(file_);
  file_ = f;
  return true;
}

void Logger::log(Level level, llvm::StringRef contract, const llvm::Twine &message) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm utc;
  gmtime_r(&tv.tv_sec, &utc);
  char stamp[40];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  const char *lvl = level == Level::Info ? "info" : level == Level::Warning ? "warning" : "error";
  std::string line;
  llvm::raw_string_ostream os(line);
  os << stamp << llvm::format(".%03dZ", int(tv.tv_usec / 1000)) << " " << tool_ << "[" << getpid()
     << "] contract=" << (contract.empty() ? "-" : contract) << " " << lvl << ": " << message << "\n";
  os.flush();
  std::lock_guard<std::mutex> lock(mu_);
  bool toStderr = stderr_;
  if (journal_) {
    // The journal stamps time, host and pid itself: the message is the rest of the line.
    std::string text = ("contract=" + (contract.empty() ? llvm::StringRef("-") : contract) + " " + lvl + ": " + message).str();
    int priority = level == Level::Info ? LOG_INFO : level == Level::Warning ? LOG_WARNING : LOG_ERR;
    std::string contractField = contract.empty() ? "-" : contract.str();
    // Falls back to stderr (which systemd also reads) when the journal's socket refuses the entry.
    toStderr = sd_journal_send("MESSAGE=%s", text.c_str(), "PRIORITY=%d", priority, "SYSLOG_IDENTIFIER=%s",
                               tool_.c_str(), "MSCALE_CONTRACT=%s", contractField.c_str(), nullptr) < 0;
  }
  if (toStderr)
    std::fwrite(line.data(), 1, line.size(), stderr);
  if (file_) {
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  }
}

void LogDiagnosticPrinter::handle(const Diagnostic &diag, const llvm::SourceMgr *sm) {
  std::string text;
  llvm::raw_string_ostream os(text);
  TextDiagnosticPrinter printer(os);
  printer.handle(diag, sm);
  os.flush();
  Logger::Level level = diag.severity == Severity::Error     ? Logger::Level::Error
                        : diag.severity == Severity::Warning ? Logger::Level::Warning
                                                             : Logger::Level::Info;
  llvm::StringRef rest(text);
  while (!rest.empty()) {
    auto [line, tail] = rest.split('\n');
    if (!line.empty())
      log_.log(level, contract_, line);
    rest = tail;
  }
}

} // namespace msc::exec
