// The executor's log: one line per event, to stderr and (with --log) a file, each line naming the
// contract it is about ("contract=t1"), so a node's log can be grepped per contract. Diagnostics go
// through the same lines (LogDiagnosticPrinter).
#pragma once

#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Twine.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace msc::exec {

class Logger {
public:
  enum class Level { Info, Warning, Error };
  explicit Logger(std::string tool, bool toStderr = true) : tool_(std::move(tool)), stderr_(toStderr) {}
  ~Logger();
  Logger(const Logger &) = delete;
  Logger &operator=(const Logger &) = delete;

  // Appends to `path`; false with `error` set when it cannot be opened.
  bool openFile(const std::string &path, std::string &error);
  void log(Level level, llvm::StringRef contract, const llvm::Twine &message);
  void info(llvm::StringRef contract, const llvm::Twine &message) { log(Level::Info, contract, message); }
  void warn(llvm::StringRef contract, const llvm::Twine &message) { log(Level::Warning, contract, message); }
  void error(llvm::StringRef contract, const llvm::Twine &message) { log(Level::Error, contract, message); }

private:
  std::string tool_;
  bool stderr_;
  FILE *file_ = nullptr;
  std::mutex mu_;
};

// Renders diagnostics as the other tools do (file: error[CODE]: message, notes) and writes each
// line to the log under the current contract.
class LogDiagnosticPrinter : public DiagnosticConsumer {
public:
  explicit LogDiagnosticPrinter(Logger &log) : log_(log) {}
  void setContract(std::string contract) { contract_ = std::move(contract); }
  void handle(const Diagnostic &diag, const llvm::SourceMgr *sm) override;

private:
  Logger &log_;
  std::string contract_;
};

} // namespace msc::exec
