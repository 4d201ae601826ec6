// The executor's log: one line per event, to stderr and (with --log) a file, each line naming the
// contract it is about ("contract=t1"), so a node's log can be grepped per contract. Diagnostics go
// through the same lines (LogDiagnosticPrinter). Started by systemd (stderr is the journal stream
// that $JOURNAL_STREAM names), the lines go to the journal instead of stderr, with their priority and
// the contract as the field MSCALE_CONTRACT (`journalctl -u mscale-exec MSCALE_CONTRACT=t1`).
#pragma once

#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Twine.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace msc::exec {

class Logger {
public:
  enum class Level { Info, Warning, Error };
  explicit Logger(std::string tool, bool toStderr = true);
  ~Logger();
  Logger(const Logger &) = delete;
  Logger &operator=(const Logger &) = delete;

  // Appends to `path`; false with `error` set when it cannot be opened.
  bool openFile(const std::string &path, std::string &error);
  void log(Level level, llvm::StringRef contract, const llvm::Twine &message);
  void info(llvm::StringRef contract, const llvm::Twine &message) { log(Level::Info, contract, message); }
  void warn(llvm::StringRef contract, const llvm::Twine &message) { log(Level::Warning, contract, message); }
  void error(llvm::StringRef contract, const llvm::Twine &message) { log(Level::Error, contract, message); }
  bool toJournal() const { return journal_; }

private:
  std::string tool_;
  bool stderr_;
  bool journal_ = false; // stderr is connected to the journal: send structured entries there
  FILE *file_ = nullptr;
  std::mutex mu_;
};

// True when $JOURNAL_STREAM ("DEVICE:INODE") names the file stderr is (systemd's rule for
// services that may log natively: sd_journal_print(3), systemd.exec(5)).
bool stderrIsJournal();

// How log lines write a duration ("150.4 ms"); a signal: signalName (supervise/Fault.h).
std::string formatMillis(uint64_t ns);

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
