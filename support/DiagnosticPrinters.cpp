#include "support/DiagnosticPrinters.h"

#include "support/ErrorIndex.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>

#include <algorithm>

namespace msc {

namespace {

// The text of the line holding `loc`, and the column (0-based) of `loc` in it.
struct SourceLine {
  llvm::StringRef text;
  const char *begin = nullptr;
};

SourceLine lineContaining(const llvm::SourceMgr &sm, llvm::SMLoc loc) {
  unsigned id = sm.FindBufferContainingLoc(loc);
  if (!id)
    return {};
  const llvm::MemoryBuffer *buffer = sm.getMemoryBuffer(id);
  const char *bufStart = buffer->getBufferStart();
  const char *bufEnd = buffer->getBufferEnd();
  const char *p = loc.getPointer();
  const char *lineStart = p;
  while (lineStart > bufStart && lineStart[-1] != '\n' && lineStart[-1] != '\r')
    --lineStart;
  const char *lineEnd = p;
  while (lineEnd < bufEnd && *lineEnd != '\n' && *lineEnd != '\r')
    ++lineEnd;
  return {llvm::StringRef(lineStart, static_cast<size_t>(lineEnd - lineStart)), lineStart};
}

// Tabs become one space so carets line up with what we print.
std::string printable(llvm::StringRef line) {
  std::string out;
  out.reserve(line.size());
  for (char c : line) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (c == '\t' || (u < 0x20)) ? ' ' : c;
  }
  return out;
}

} // namespace

void TextDiagnosticPrinter::printOne(Severity severity, llvm::StringRef code, llvm::StringRef message,
                                     const Location &loc, llvm::ArrayRef<FixIt> fixits,
                                     const llvm::SourceMgr *sm) {
  ResolvedLoc where = resolve(loc, sm);
  if (!where.file.empty()) {
    os_ << where.file << ':';
    if (where.line) {
      os_ << where.line << ':';
      if (where.column)
        os_ << where.column << ':';
    }
    os_ << ' ';
  }
  os_ << severityName(severity);
  if (!code.empty())
    os_ << '[' << code << ']';
  os_ << ": " << message << '\n';

  if (!sm || !loc.hasRange())
    return;
  SourceLine line = lineContaining(*sm, loc.range.Start);
  if (!line.begin)
    return;
  // Very long lines (minified or binary input) are clipped around the caret.
  constexpr size_t kMaxShown = 200;
  size_t startCol = static_cast<size_t>(loc.range.Start.getPointer() - line.begin);
  size_t endCol = startCol + 1;
  if (loc.range.End.isValid() && loc.range.End.getPointer() > loc.range.Start.getPointer())
    endCol = std::min(line.text.size(), static_cast<size_t>(loc.range.End.getPointer() - line.begin));
  endCol = std::max(endCol, startCol + 1);
  size_t shownFrom = startCol > kMaxShown / 2 ? startCol - kMaxShown / 2 : 0;
  llvm::StringRef shown = line.text.substr(shownFrom, kMaxShown);
  os_ << printable(shown) << '\n';
  // Carets are placed in display columns: a UTF-8 sequence shows as one character, not one per byte.
  auto width = [&](size_t from, size_t to) {
    size_t n = 0;
    for (size_t i = from; i < to && i < line.text.size(); ++i)
      n += (static_cast<unsigned char>(line.text[i]) & 0xC0) != 0x80;
    return n;
  };
  std::string caret(width(shownFrom, startCol), ' ');
  caret += '^';
  size_t tildes = std::min(std::max<size_t>(width(startCol, endCol), 1) - 1, kMaxShown);
  caret.append(tildes, '~');
  os_ << caret << '\n';
  for (const FixIt &fix : fixits) {
    if (!fix.range.Start.isValid() || fix.range.Start.getPointer() < line.begin ||
        fix.range.Start.getPointer() > line.begin + line.text.size())
      continue;
    size_t col = static_cast<size_t>(fix.range.Start.getPointer() - line.begin);
    if (col < shownFrom)
      continue;
    os_ << std::string(width(shownFrom, col), ' ') << fix.replacement << '\n';
  }
}

void TextDiagnosticPrinter::handle(const Diagnostic &diag, const llvm::SourceMgr *sm) {
  printOne(diag.severity, diagInfo(diag.code).name, diag.message, diag.loc, diag.fixits, sm);
  for (const DiagNote &note : diag.notes)
    printOne(Severity::Note, "", note.message, note.loc, note.fixits, sm);
}

namespace {

llvm::json::Object locationJson(const Location &loc, const llvm::SourceMgr *sm) {
  ResolvedLoc r = resolve(loc, sm);
  llvm::json::Object o;
  o["file"] = r.file;
  if (r.line) {
    o["line"] = static_cast<int64_t>(r.line);
    o["column"] = static_cast<int64_t>(r.column);
    o["endLine"] = static_cast<int64_t>(r.endLine);
    o["endColumn"] = static_cast<int64_t>(r.endColumn);
  }
  return o;
}

llvm::json::Array fixitsJson(llvm::ArrayRef<FixIt> fixits, const llvm::SourceMgr *sm) {
  llvm::json::Array out;
  for (const FixIt &fix : fixits) {
    llvm::json::Object o = locationJson(Location{fix.range, {}, 0}, sm);
    o["replacement"] = fix.replacement;
    out.push_back(std::move(o));
  }
  return out;
}

std::string serialize(llvm::json::Value value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << value;
  return s;
}

} // namespace

void JsonDiagnosticPrinter::handle(const Diagnostic &diag, const llvm::SourceMgr *sm) {
  llvm::json::Object o = locationJson(diag.loc, sm);
  o["code"] = diagInfo(diag.code).name;
  o["severity"] = severityName(diag.severity);
  o["message"] = diag.message;
  llvm::json::Array notes;
  for (const DiagNote &note : diag.notes) {
    llvm::json::Object n = locationJson(note.loc, sm);
    n["message"] = note.message;
    n["fixits"] = fixitsJson(note.fixits, sm);
    notes.push_back(std::move(n));
  }
  o["notes"] = std::move(notes);
  o["fixits"] = fixitsJson(diag.fixits, sm);
  items_.push_back(serialize(std::move(o)));
}

void JsonDiagnosticPrinter::finish(const llvm::SourceMgr *) {
  os_ << "[";
  for (size_t i = 0; i < items_.size(); ++i)
    os_ << (i ? ",\n " : "\n ") << items_[i];
  os_ << (items_.empty() ? "]\n" : "\n]\n");
  items_.clear();
}

namespace {

llvm::json::Object sarifRegion(const ResolvedLoc &r) {
  llvm::json::Object region;
  region["startLine"] = static_cast<int64_t>(r.line);
  if (r.column) {
    region["startColumn"] = static_cast<int64_t>(r.column);
    region["endLine"] = static_cast<int64_t>(r.endLine);
    region["endColumn"] = static_cast<int64_t>(std::max(r.endColumn, r.column + 1));
  }
  return region;
}

constexpr const char *kSrcRoot = "%SRCROOT%";

// RFC 3986 path characters stay; everything else (space, '%', '#', '?', bytes >= 0x80) is %XX.
std::string percentEncodePath(llvm::StringRef path) {
  std::string out;
  for (char c : path) {
    unsigned char u = static_cast<unsigned char>(c);
    if (llvm::isAlnum(c) || llvm::StringRef("-._~/!$&'()*+,;=:@").contains(c))
      out += c;
    else
      out += {'%', llvm::hexdigit(u >> 4), llvm::hexdigit(u & 15)};
  }
  return out;
}

// Absolute (against the working directory) with "." and ".." removed; empty if that fails.
std::string absoluteNormalised(llvm::StringRef path) {
  llvm::SmallString<256> p(path);
  if (llvm::sys::fs::make_absolute(p))
    return {};
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return std::string(p.str());
}

llvm::StringRef sarifLevel(Severity s) {
  switch (s) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "error";
}

} // namespace

SarifDiagnosticPrinter::SarifDiagnosticPrinter(llvm::raw_ostream &os, std::string toolName,
                                               std::string toolVersion, llvm::StringRef sourceRoot)
    : os_(os), toolName_(std::move(toolName)), toolVersion_(std::move(toolVersion)) {
  llvm::SmallString<256> cwd;
  if (sourceRoot.empty() && !llvm::sys::fs::current_path(cwd))
    sourceRoot = cwd;
  if (!sourceRoot.empty())
    root_ = absoluteNormalised(sourceRoot);
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
}

SarifDiagnosticPrinter::Artifact SarifDiagnosticPrinter::artifact(llvm::StringRef file) const {
  if (file.starts_with("<") && file.ends_with(">")) // "<stdin>" and the like: no file to point at
    return {"", "", file.str()};
  std::string abs = absoluteNormalised(file);
  if (abs.empty()) // no working directory to resolve a relative name against: keep it relative
    return {percentEncodePath(file), "", ""};
  llvm::StringRef rel(abs);
  if (!root_.empty() && rel.consume_front(root_) && (root_ == "/" || rel.consume_front("/")) && !rel.empty())
    return {percentEncodePath(rel), kSrcRoot, ""};
  return {"file://" + percentEncodePath(abs), "", ""};
}

namespace {

llvm::json::Object artifactJson(const SarifDiagnosticPrinter::Artifact &a) {
  llvm::json::Object o;
  if (!a.uri.empty())
    o["uri"] = a.uri;
  if (!a.uriBaseId.empty())
    o["uriBaseId"] = a.uriBaseId;
  if (!a.description.empty())
    o["description"] = llvm::json::Object{{"text", a.description}};
  return o;
}

// A SARIF location; without a file (a note about no place in particular) it is empty.
llvm::json::Object sarifLocation(const SarifDiagnosticPrinter &printer, const Location &loc,
                                 const llvm::SourceMgr *sm) {
  ResolvedLoc r = resolve(loc, sm);
  if (r.file.empty())
    return {};
  llvm::json::Object physical;
  physical["artifactLocation"] = artifactJson(printer.artifact(r.file));
  if (r.line)
    physical["region"] = sarifRegion(r);
  return llvm::json::Object{{"physicalLocation", std::move(physical)}};
}

} // namespace

void SarifDiagnosticPrinter::handle(const Diagnostic &diag, const llvm::SourceMgr *sm) {
  if (std::find(rules_.begin(), rules_.end(), diag.code) == rules_.end())
    rules_.push_back(diag.code);
  llvm::json::Object result;
  result["ruleId"] = diagInfo(diag.code).name;
  result["level"] = sarifLevel(diag.severity);
  result["message"] = llvm::json::Object{{"text", diag.message}};
  if (!resolve(diag.loc, sm).file.empty())
    result["locations"] = llvm::json::Array{sarifLocation(*this, diag.loc, sm)};
  llvm::json::Array related;
  int64_t id = 0;
  for (const DiagNote &note : diag.notes) {
    llvm::json::Object rel = sarifLocation(*this, note.loc, sm);
    rel["id"] = id++;
    rel["message"] = llvm::json::Object{{"text", note.message}};
    related.push_back(std::move(rel));
  }
  if (!related.empty())
    result["relatedLocations"] = std::move(related);
  std::vector<FixIt> fixits = diag.fixits;
  for (const DiagNote &note : diag.notes)
    fixits.insert(fixits.end(), note.fixits.begin(), note.fixits.end());
  llvm::json::Array fixes;
  for (const FixIt &fix : fixits) {
    ResolvedLoc r = resolve(fix.range, sm);
    if (r.file.empty())
      continue;
    llvm::json::Object deleted{{"startLine", static_cast<int64_t>(r.line)},
                               {"startColumn", static_cast<int64_t>(r.column)},
                               {"endLine", static_cast<int64_t>(r.endLine)},
                               {"endColumn", static_cast<int64_t>(r.endColumn)}};
    llvm::json::Object replacement{{"deletedRegion", std::move(deleted)},
                                   {"insertedContent", llvm::json::Object{{"text", fix.replacement}}}};
    llvm::json::Object change{{"artifactLocation", artifactJson(artifact(r.file))},
                              {"replacements", llvm::json::Array{std::move(replacement)}}};
    fixes.push_back(llvm::json::Object{
        {"description", llvm::json::Object{{"text", "replace with '" + fix.replacement + "'"}}},
        {"artifactChanges", llvm::json::Array{std::move(change)}}});
  }
  if (!fixes.empty())
    result["fixes"] = std::move(fixes);
  results_.push_back(serialize(std::move(result)));
}

void SarifDiagnosticPrinter::finish(const llvm::SourceMgr *) {
  llvm::json::Array rules;
  std::vector<DiagCode> sorted = rules_;
  std::sort(sorted.begin(), sorted.end());
  for (DiagCode code : sorted) {
    const DiagInfo &info = diagInfo(code);
    llvm::json::Object rule{{"id", info.name},
                            {"shortDescription", llvm::json::Object{{"text", info.summary}}},
                            {"helpUri", "docs/error_codes.md#" + info.name.lower()},
                            {"defaultConfiguration",
                             llvm::json::Object{{"level", sarifLevel(info.severity)}}}};
    if (auto text = explainText(info.name))
      rule["fullDescription"] = llvm::json::Object{{"text", *text}};
    rules.push_back(std::move(rule));
  }
  llvm::json::Array results;
  for (const std::string &r : results_) {
    auto parsed = llvm::json::parse(r);
    if (parsed)
      results.push_back(std::move(*parsed));
    else
      llvm::consumeError(parsed.takeError());
  }
  llvm::json::Object driver{{"name", toolName_},
                            {"version", toolVersion_},
                            {"informationUri", "docs/error_codes.md"},
                            {"rules", std::move(rules)}};
  llvm::json::Object run{{"tool", llvm::json::Object{{"driver", std::move(driver)}}},
                         {"results", std::move(results)}};
  if (!root_.empty()) {
    std::string rootUri = "file://" + percentEncodePath(root_);
    if (rootUri.back() != '/')
      rootUri += '/';
    run["originalUriBaseIds"] = llvm::json::Object{{kSrcRoot, llvm::json::Object{{"uri", rootUri}}}};
  }
  llvm::json::Object log{{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                         {"version", "2.1.0"},
                         {"runs", llvm::json::Array{std::move(run)}}};
  os_ << llvm::formatv("{0:2}", llvm::json::Value(std::move(log))) << '\n';
  results_.clear();
}

std::string firstErrorLine(const CollectingConsumer &collected) {
  for (const Diagnostic &d : collected.diags)
    if (d.severity == Severity::Error) {
      std::string text;
      llvm::raw_string_ostream os(text);
      TextDiagnosticPrinter printer(os);
      printer.handle(d, nullptr);
      os.flush();
      llvm::StringRef line = llvm::StringRef(text).split('\n').first;
      size_t at = line.find("error[");
      return (at == llvm::StringRef::npos ? line : line.substr(at)).str();
    }
  return "no diagnostic";
}

std::unique_ptr<DiagnosticConsumer> makeDiagnosticPrinter(DiagnosticsFormat format, llvm::raw_ostream &os,
                                                          llvm::StringRef toolName, llvm::StringRef version,
                                                          llvm::StringRef sourceRoot) {
  switch (format) {
  case DiagnosticsFormat::Json: return std::make_unique<JsonDiagnosticPrinter>(os);
  case DiagnosticsFormat::Sarif:
    return std::make_unique<SarifDiagnosticPrinter>(os, toolName.str(), version.str(), sourceRoot);
  case DiagnosticsFormat::Text: break;
  }
  return std::make_unique<TextDiagnosticPrinter>(os);
}

} // namespace msc
