#include "support/Diagnostic.h"

#include "support/DiagFormat.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Support/SourceMgr.h>

#include <algorithm>

namespace msc {

namespace {
constexpr DiagInfo kDiagTable[] = {
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) {#CODE, Severity::SEVERITY, FORMAT, SUMMARY},
#include "support/Diagnostics.def"
};
} // namespace

const DiagInfo &diagInfo(DiagCode code) { return kDiagTable[static_cast<size_t>(code)]; }

std::optional<DiagCode> lookupDiagCode(llvm::StringRef name) {
  static const llvm::StringMap<DiagCode> byName = [] {
    llvm::StringMap<DiagCode> map;
    for (size_t i = 0; i < static_cast<size_t>(DiagCode::NumCodes); ++i)
      map[kDiagTable[i].name] = static_cast<DiagCode>(i);
    return map;
  }();
  auto it = byName.find(name.upper());
  if (it == byName.end())
    return std::nullopt;
  return it->second;
}

llvm::StringRef severityName(Severity s) {
  switch (s) {
  case Severity::Note: return "note";
  case Severity::Warning: return "warning";
  case Severity::Error: return "error";
  }
  return "error";
}

std::string formatDiag(llvm::StringRef format, llvm::ArrayRef<std::string> args) {
  return fillDiagFormat(std::string_view(format.data(), format.size()), args);
}

DiagnosticConsumer::~DiagnosticConsumer() = default;

DiagBuilder::DiagBuilder(DiagnosticEngine &engine, DiagCode code, Location loc) : engine_(&engine) {
  diag_.code = code;
  diag_.severity = diagInfo(code).severity;
  diag_.loc = std::move(loc);
}

DiagBuilder::DiagBuilder(DiagBuilder &&other) noexcept
    : engine_(other.engine_), diag_(std::move(other.diag_)), args_(std::move(other.args_)) {
  other.engine_ = nullptr;
}

DiagBuilder::~DiagBuilder() {
  if (!engine_)
    return;
  diag_.message = formatDiag(diagInfo(diag_.code).format, args_);
  engine_->emit(std::move(diag_));
}

DiagBuilder &DiagBuilder::operator<<(llvm::StringRef arg) {
  args_.push_back(arg.str());
  return *this;
}
DiagBuilder &DiagBuilder::operator<<(int64_t arg) {
  args_.push_back(std::to_string(arg));
  return *this;
}
DiagBuilder &DiagBuilder::operator<<(uint64_t arg) {
  args_.push_back(std::to_string(arg));
  return *this;
}
DiagBuilder &DiagBuilder::note(Location loc, std::string message) {
  diag_.notes.push_back({std::move(loc), std::move(message), {}});
  return *this;
}
DiagBuilder &DiagBuilder::noteWithFixIt(Location loc, std::string message, FixIt fix) {
  diag_.notes.push_back({std::move(loc), std::move(message), {std::move(fix)}});
  return *this;
}
DiagBuilder &DiagBuilder::fixIt(FixIt fix) {
  diag_.fixits.push_back(std::move(fix));
  return *this;
}

void DiagnosticEngine::emit(Diagnostic diag) {
  emitted_[static_cast<size_t>(diag.code)] = true;
  if (diag.severity == Severity::Warning && warningsAsErrors_)
    diag.severity = Severity::Error;
  if (diag.severity == Severity::Error) {
    if (errorLimit_ && errors_ >= errorLimit_) {
      ++errors_;
      return;
    }
    ++errors_;
  } else if (diag.severity == Severity::Warning) {
    ++warnings_;
  }
  consumer_->handle(diag, sm_);
  if (errorLimit_ && errors_ == errorLimit_ && !limitReported_ && diag.code != DiagCode::ERR_DRV_003) {
    limitReported_ = true;
    Diagnostic limit;
    limit.code = DiagCode::ERR_DRV_003;
    limit.severity = Severity::Error;
    limit.message = formatDiag(diagInfo(DiagCode::ERR_DRV_003).format, {std::to_string(errorLimit_)});
    consumer_->handle(limit, sm_);
  }
}

void DiagnosticEngine::finish() { consumer_->finish(sm_); }

ResolvedLoc resolve(llvm::SMRange range, const llvm::SourceMgr *sm) {
  ResolvedLoc out;
  if (!sm || !range.isValid())
    return out;
  unsigned buffer = sm->FindBufferContainingLoc(range.Start);
  if (!buffer)
    return out;
  out.file = sm->getMemoryBuffer(buffer)->getBufferIdentifier().str();
  std::tie(out.line, out.column) = sm->getLineAndColumn(range.Start, buffer);
  if (range.End.isValid() && sm->FindBufferContainingLoc(range.End) == buffer)
    std::tie(out.endLine, out.endColumn) = sm->getLineAndColumn(range.End, buffer);
  else
    std::tie(out.endLine, out.endColumn) = std::make_pair(out.line, out.column);
  return out;
}

ResolvedLoc resolve(const Location &loc, const llvm::SourceMgr *sm) {
  if (loc.hasRange()) {
    ResolvedLoc r = resolve(loc.range, sm);
    if (!r.file.empty())
      return r;
  }
  ResolvedLoc out;
  out.file = loc.file;
  out.line = out.endLine = loc.line;
  return out;
}

std::vector<std::string> closestMatches(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> candidates,
                                        unsigned n) {
  std::vector<std::pair<unsigned, llvm::StringRef>> scored;
  // Allow roughly one edit in three characters, at least one edit.
  unsigned limit = std::max<unsigned>(1, static_cast<unsigned>(word.size()) / 3);
  for (llvm::StringRef candidate : candidates) {
    unsigned distance = word.edit_distance(candidate, /*AllowReplacements=*/true, limit + 1);
    if (distance <= limit && candidate != word)
      scored.emplace_back(distance, candidate);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < n; ++i)
    out.push_back(scored[i].second.str());
  return out;
}

std::string joinNumbers(const std::vector<unsigned> &values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i)
      out += i + 1 == values.size() ? " and " : ", ";
    out += std::to_string(values[i]);
  }
  return out;
}

std::optional<std::string> closestMatch(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> candidates) {
  auto matches = closestMatches(word, candidates, 1);
  if (matches.empty())
    return std::nullopt;
  return matches.front();
}

} // namespace msc
