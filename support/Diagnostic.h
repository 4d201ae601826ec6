// Diagnostics shared by every layer: one table of codes (Diagnostics.def), a value type for a
// reported problem, and an engine that hands each problem to a consumer (text, JSON, SARIF).
// The code that reports never formats for a terminal; the consumer decides.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace msc {

enum class DiagCode : uint16_t {
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) CODE,
#include "support/Diagnostics.def"
  NumCodes
};

enum class Severity : uint8_t { Note, Warning, Error };

struct DiagInfo {
  llvm::StringRef name;   // "ERR_SEM_004"
  Severity severity;
  llvm::StringRef format; // "unknown field '%0' in %1"
  llvm::StringRef summary;
};
const DiagInfo &diagInfo(DiagCode code);
std::optional<DiagCode> lookupDiagCode(llvm::StringRef name);
llvm::StringRef severityName(Severity s);

// A place in some input. Inputs loaded into the SourceMgr get a range (line, column, caret);
// inputs we cannot map to text (a binary plan, a hwloc XML read by hwloc) get a file name only.
struct Location {
  llvm::SMRange range;
  std::string file;
  unsigned line = 0; // 1-based, for file-only locations that still know their line
  static Location none() { return {}; }
  bool hasRange() const { return range.isValid(); }
  bool operator==(const Location &o) const {
    return range.Start == o.range.Start && range.End == o.range.End && file == o.file && line == o.line;
  }
};

struct FixIt {
  llvm::SMRange range; // empty range (start == end) means insertion
  std::string replacement;
};

struct DiagNote {
  Location loc;
  std::string message;
  std::vector<FixIt> fixits;
};

struct Diagnostic {
  DiagCode code;
  Severity severity;
  std::string message;
  Location loc;
  std::vector<DiagNote> notes;
  std::vector<FixIt> fixits;
};

// Substitutes %0..%9 in a format with the arguments.
std::string formatDiag(llvm::StringRef format, llvm::ArrayRef<std::string> args);

class DiagnosticConsumer {
public:
  virtual ~DiagnosticConsumer();
  virtual void handle(const Diagnostic &diag, const llvm::SourceMgr *sm) = 0;
  virtual void finish(const llvm::SourceMgr *sm) {}
};

class DiagnosticEngine;

// Collects the arguments, notes and fix-its of one diagnostic; emits it when destroyed.
class DiagBuilder {
public:
  DiagBuilder(DiagnosticEngine &engine, DiagCode code, Location loc);
  DiagBuilder(DiagBuilder &&other) noexcept;
  DiagBuilder(const DiagBuilder &) = delete;
  ~DiagBuilder();

  DiagBuilder &operator<<(llvm::StringRef arg);
  DiagBuilder &operator<<(const std::string &arg) { return *this << llvm::StringRef(arg); }
  DiagBuilder &operator<<(const char *arg) { return *this << llvm::StringRef(arg); }
  DiagBuilder &operator<<(int64_t arg);
  DiagBuilder &operator<<(uint64_t arg);
  DiagBuilder &operator<<(int arg) { return *this << static_cast<int64_t>(arg); }
  DiagBuilder &operator<<(unsigned arg) { return *this << static_cast<uint64_t>(arg); }

  DiagBuilder &note(Location loc, std::string message);
  DiagBuilder &noteWithFixIt(Location loc, std::string message, FixIt fix);
  DiagBuilder &fixIt(FixIt fix);

private:
  DiagnosticEngine *engine_;
  Diagnostic diag_;
  std::vector<std::string> args_;
};

class DiagnosticEngine {
public:
  DiagnosticEngine(llvm::SourceMgr *sm, DiagnosticConsumer &consumer) : sm_(sm), consumer_(&consumer) {}

  DiagBuilder report(DiagCode code, Location loc = Location::none()) { return DiagBuilder(*this, code, loc); }
  DiagBuilder report(DiagCode code, llvm::SMRange range) { return report(code, Location{range, {}, 0}); }

  void emit(Diagnostic diag);
  void finish();

  unsigned errorCount() const { return errors_; }
  unsigned warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ != 0; }
  // Whether a diagnostic with `code` was emitted (tools map some codes to exit statuses).
  bool emitted(DiagCode code) const { return emitted_[static_cast<size_t>(code)]; }
  // Stop reporting after this many errors (0 = no limit); the last one says so.
  void setErrorLimit(unsigned limit) { errorLimit_ = limit; }
  void setWarningsAsErrors(bool on) { warningsAsErrors_ = on; }
  llvm::SourceMgr *sourceMgr() const { return sm_; }
  void setSourceMgr(llvm::SourceMgr *sm) { sm_ = sm; }

private:
  llvm::SourceMgr *sm_;
  DiagnosticConsumer *consumer_;
  unsigned errors_ = 0;
  unsigned warnings_ = 0;
  unsigned errorLimit_ = 0;
  bool warningsAsErrors_ = false;
  bool limitReported_ = false;
  std::vector<bool> emitted_ = std::vector<bool>(static_cast<size_t>(DiagCode::NumCodes));
};

// Keeps every diagnostic in memory; used by tests and by callers that decide later.
class CollectingConsumer : public DiagnosticConsumer {
public:
  void handle(const Diagnostic &diag, const llvm::SourceMgr *) override { diags.push_back(diag); }
  std::vector<Diagnostic> diags;
};

// Resolved position of a location, for consumers.
struct ResolvedLoc {
  std::string file;
  unsigned line = 0, column = 0, endLine = 0, endColumn = 0; // 1-based; end column exclusive
};
ResolvedLoc resolve(const Location &loc, const llvm::SourceMgr *sm);
ResolvedLoc resolve(llvm::SMRange range, const llvm::SourceMgr *sm);

// "2, 3 and 5": numbers in a message.
std::string joinNumbers(const std::vector<unsigned> &values);

// "did you mean": the candidate closest to `word` by edit distance, if close enough.
std::optional<std::string> closestMatch(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> candidates);
// The up-to-`n` closest candidates, best first, within a sensible distance.
std::vector<std::string> closestMatches(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> candidates, unsigned n);

} // namespace msc
