#include "executor/Logger.h"

#include "support/DiagnosticPrinters.h"

#include <llvm/Support/raw_ostream.h>

#include <llvm/Support/Format.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <sys/time.h>
#include <unistd.h>

namespace msc::exec {

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
  if (stderr_)
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
