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
// Files are named relative to a source root, so a log means the same on the machine that shows it
// as where it was made: an artifactLocation is {"uri": "dir/f.msc", "uriBaseId": "%SRCROOT%"} and
// run.originalUriBaseIds gives %SRCROOT% as a file:// URI ending in '/'. The root is `sourceRoot`
// when given, else the current working directory of the process: tools are run from the checkout
// they compile (as CI does), and a relative input path is relative to it anyway. A file outside the
// root keeps an absolute file:// URI and no uriBaseId; a buffer that is no file ("<stdin>") has
// only a description.
class SarifDiagnosticPrinter : public DiagnosticConsumer {
public:
  SarifDiagnosticPrinter(llvm::raw_ostream &os, std::string toolName, std::string toolVersion,
                         llvm::StringRef sourceRoot = {});
  void handle(const Diagnostic &diag, const llvm::SourceMgr *sm) override;
  void finish(const llvm::SourceMgr *sm) override;

  // The absolute, normalised root (no trailing '/' unless it is "/"); empty if none was found.
  const std::string &sourceRoot() const { return root_; }
  // The artifactLocation for a file name as the SourceMgr holds it: a `uri` relative to
  // `uriBaseId`, an absolute file:// `uri` (no base), or only a `description` ("<stdin>").
  struct Artifact {
    std::string uri, uriBaseId, description;
  };
  Artifact artifact(llvm::StringRef file) const;

private:
  llvm::raw_ostream &os_;
  std::string toolName_, toolVersion_, root_;
  std::vector<std::string> results_;
  std::vector<DiagCode> rules_;
};

// The first error among collected diagnostics as one line ("error[CODE]: message"), for a log line
// that says why something was refused; "no diagnostic" when there is none.
std::string firstErrorLine(const CollectingConsumer &collected);

enum class DiagnosticsFormat { Text, Json, Sarif };
// `sourceRoot` is for SARIF (see SarifDiagnosticPrinter); empty means the working directory.
std::unique_ptr<DiagnosticConsumer> makeDiagnosticPrinter(DiagnosticsFormat format, llvm::raw_ostream &os,
                                                          llvm::StringRef toolName, llvm::StringRef version,
                                                          llvm::StringRef sourceRoot = {});

} // namespace msc
