// The three ways a diagnostic leaves the process: clang-style text, a JSON array, SARIF 2.1.0.
#pragma once

#include "support/Diagnostic.h"

#include <llvm/Support/raw_ostream.h>

namespace msc {

// file:line:col: error[CODE]: message, then the source line, a caret under the range, fix-its.
class TextDiagnosticPrinter : public DiagnosticConsumer {
public:
  explicit TextDiagnosticPrinter(llvm::raw_ostream &os) : os_(os) {}
  void handle(const Diagnostic &diag, const llvm::SourceMgr *sm) override;

private:
  void printOne(Severity severity, llvm::StringRef code, llvm::StringRef message, const Location &loc,
                llvm::ArrayRef<FixIt> fixits, const llvm::SourceMgr *sm);
  llvm::raw_ostream &os_;
};

// One JSON document (an array of diagnostics) written at finish().
class JsonDiagnosticPrinter : public DiagnosticConsumer {
public:
  explicit JsonDiagnosticPrinter(llvm::raw_ostream &os) : os_(os) {}
  void handle(const Diagnostic &diag, const llvm::SourceMgr *sm) override;
  void finish(const llvm::SourceMgr *sm) override;

private:
  llvm::raw_ostream &os_;
  std::vector<std::string> items_; // each a serialized JSON object
};

// SARIF 2.1.0, so CI systems can annotate pull requests. One run, rules for the codes seen.
class SarifDiagnosticPrinter : public DiagnosticConsumer {
public:
  SarifDiagnosticPrinter(llvm::raw_ostream &os, std::string toolName, std::string toolVersion)
      : os_(os), toolName_(std::move(toolName)), toolVersion_(std::move(toolVersion)) {}
  void handle(const Diagnostic &diag, const llvm::SourceMgr *sm) override;
  void finish(const llvm::SourceMgr *sm) override;

private:
  llvm::raw_ostream &os_;
  std::string toolName_, toolVersion_;
  std::vector<std::string> results_;
  std::vector<DiagCode> rules_;
};

enum class DiagnosticsFormat { Text, Json, Sarif };
std::unique_ptr<DiagnosticConsumer> makeDiagnosticPrinter(DiagnosticsFormat format, llvm::raw_ostream &os,
                                                          llvm::StringRef toolName, llvm::StringRef version);

} // namespace msc
