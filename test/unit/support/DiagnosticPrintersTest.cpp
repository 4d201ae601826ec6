// The three consumers: clang-style text (exact bytes), JSON and SARIF (parsed back with
// llvm::json, so that what CI tools read is checked as data, not as text).
#include "support/DiagnosticPrinters.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include <gtest/gtest.h>

namespace msc {
namespace {

class Printers : public ::testing::Test {
protected:
  void SetUp() override {
    id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(kSource, "t.msc"), llvm::SMLoc());
  }
  llvm::SMRange rangeOf(llvm::StringRef needle, size_t from = 0) {
    llvm::StringRef text = sm.getMemoryBuffer(id)->getBuffer();
    size_t at = text.find(needle, from);
    EXPECT_NE(at, llvm::StringRef::npos) << needle.str();
    const char *p = text.data() + at;
    return {llvm::SMLoc::getFromPointer(p), llvm::SMLoc::getFromPointer(p + needle.size())};
  }
  // Reports an unknown field with a fix-it note, then a file-level error.
  void reportTwo(DiagnosticEngine &diags) {
    llvm::SMRange field = rangeOf("numa_nod");
    diags.report(DiagCode::ERR_SEM_004, field)
            .noteWithFixIt(Location{field, {}, 0}, "did you mean 'numa_node'?", {field, "numa_node"})
        << "numa_nod" << "role 'data'";
    diags.report(DiagCode::ERR_SYN_007, Location{{}, "big.msc", 0}) << uint64_t(20) << uint64_t(10);
    diags.finish();
  }
  static constexpr const char *kSource = "contract c {\n  io_topology { data { numa_nod = 1; } }\n}\n";
  llvm::SourceMgr sm;
  unsigned id = 0;
  std::string out;
  llvm::raw_string_ostream os{out};
};

TEST_F(Printers, TextIsClangStyle) {
  TextDiagnosticPrinter printer(os);
  DiagnosticEngine diags(&sm, printer);
  reportTwo(diags);
  EXPECT_EQ(out, "t.msc:2:24: error[ERR_SEM_004]: unknown field 'numa_nod' in role 'data'\n"
                 "  io_topology { data { numa_nod = 1; } }\n"
                 "                       ^~~~~~~~\n"
                 "t.msc:2:24: note: did you mean 'numa_node'?\n"
                 "  io_topology { data { numa_nod = 1; } }\n"
                 "                       ^~~~~~~~\n"
                 "                       numa_node\n"
                 "big.msc: error[ERR_SYN_007]: file is too large (20 bytes; the limit is 10)\n");
}

TEST_F(Printers, TextWithoutAnyLocation) {
  TextDiagnosticPrinter printer(os);
  DiagnosticEngine diags(&sm, printer);
  diags.report(DiagCode::ERR_DRV_002) << "BOGUS";
  diags.report(DiagCode::ERR_SEM_010, Location{{}, "f.msc", 7}) << "x";
  EXPECT_EQ(out, "error[ERR_DRV_002]: unknown error code 'BOGUS'\n"
                 "f.msc:7: error[ERR_SEM_010]: cannot find import 'x'\n");
}

TEST_F(Printers, TextInsertionFixIt) {
  TextDiagnosticPrinter printer(os);
  DiagnosticEngine diags(&sm, printer);
  llvm::SMRange brace = rangeOf("}", 40);
  llvm::SMLoc after = rangeOf("1;").Start;
  diags.report(DiagCode::ERR_SYN_001, brace).fixIt({{after, after}, "!"}) << "message";
  // The caret is under the first '}' (column 38); the insertion goes before "1;" (column 35).
  EXPECT_EQ(out, "t.msc:2:38: error[ERR_SYN_001]: message\n"
                 "  io_topology { data { numa_nod = 1; } }\n"
                 "                                     ^\n"
                 "                                  !\n");
}

TEST(PrintersText, ClipsVeryLongLinesAroundTheCaret) {
  llvm::SourceMgr sm;
  std::string line = std::string(1000, 'a') + "BAD" + std::string(1000, 'b');
  unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(line, "long.msc"), llvm::SMLoc());
  const char *start = sm.getMemoryBuffer(id)->getBufferStart() + 1000;
  std::string out;
  llvm::raw_string_ostream os(out);
  TextDiagnosticPrinter printer(os);
  DiagnosticEngine diags(&sm, printer);
  diags.report(DiagCode::ERR_SYN_003, llvm::SMRange(llvm::SMLoc::getFromPointer(start),
                                                   llvm::SMLoc::getFromPointer(start + 3)))
      << "B";
  llvm::SmallVector<llvm::StringRef, 4> lines;
  llvm::StringRef(out).split(lines, '\n');
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], "long.msc:1:1001: error[ERR_SYN_003]: invalid character 'B'");
  EXPECT_EQ(lines[1], std::string(100, 'a') + "BAD" + std::string(97, 'b'));
  EXPECT_EQ(lines[2], std::string(100, ' ') + "^~~");
}

TEST_F(Printers, JsonIsOneParseableArray) {
  JsonDiagnosticPrinter printer(os);
  DiagnosticEngine diags(&sm, printer);
  reportTwo(diags);
  auto parsed = llvm::json::parse(out);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Array *items = parsed->getAsArray();
  ASSERT_TRUE(items);
  ASSERT_EQ(items->size(), 2u);

  const llvm::json::Object *first = (*items)[0].getAsObject();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->getString("code"), "ERR_SEM_004");
  EXPECT_EQ(first->getString("severity"), "error");
  EXPECT_EQ(first->getString("message"), "unknown field 'numa_nod' in role 'data'");
  EXPECT_EQ(first->getString("file"), "t.msc");
  EXPECT_EQ(first->getInteger("line"), 2);
  EXPECT_EQ(first->getInteger("column"), 24);
  EXPECT_EQ(first->getInteger("endLine"), 2);
  EXPECT_EQ(first->getInteger("endColumn"), 32);
  const llvm::json::Array *notes = first->getArray("notes");
  ASSERT_TRUE(notes && notes->size() == 1);
  const llvm::json::Object *note = (*notes)[0].getAsObject();
  EXPECT_EQ(note->getString("message"), "did you mean 'numa_node'?");
  const llvm::json::Array *fixits = note->getArray("fixits");
  ASSERT_TRUE(fixits && fixits->size() == 1);
  EXPECT_EQ((*fixits)[0].getAsObject()->getString("replacement"), "numa_node");
  EXPECT_EQ((*fixits)[0].getAsObject()->getInteger("column"), 24);

  const llvm::json::Object *second = (*items)[1].getAsObject();
  EXPECT_EQ(second->getString("code"), "ERR_SYN_007");
  EXPECT_EQ(second->getString("file"), "big.msc");
  EXPECT_FALSE(second->get("line")) << "a file-level diagnostic has no line";
}

TEST_F(Printers, JsonWithNothingToSayIsAnEmptyArray) {
  JsonDiagnosticPrinter printer(os);
  DiagnosticEngine diags(&sm, printer);
  diags.finish();
  auto parsed = llvm::json::parse(out);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_TRUE(parsed->getAsArray());
  EXPECT_TRUE(parsed->getAsArray()->empty());
}

TEST_F(Printers, JsonEscapesMessages) {
  JsonDiagnosticPrinter printer(os);
  DiagnosticEngine diags(&sm, printer);
  diags.report(DiagCode::ERR_SEM_010) << "a\"b\\c\nd\x01";
  diags.finish();
  auto parsed = llvm::json::parse(out);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ((*parsed->getAsArray())[0].getAsObject()->getString("message"), "cannot find import 'a\"b\\c\nd\x01'");
}

TEST_F(Printers, SarifIsVersion210WithRulesResultsAndFixes) {
  SarifDiagnosticPrinter printer(os, "mscalec", "9.9.9");
  DiagnosticEngine diags(&sm, printer);
  reportTwo(diags);
  auto parsed = llvm::json::parse(out);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object *log = parsed->getAsObject();
  ASSERT_TRUE(log);
  EXPECT_EQ(log->getString("version"), "2.1.0");
  EXPECT_TRUE(log->getString("$schema"));
  const llvm::json::Array *runs = log->getArray("runs");
  ASSERT_TRUE(runs && runs->size() == 1);
  const llvm::json::Object *run = (*runs)[0].getAsObject();
  const llvm::json::Object *driver = run->getObject("tool")->getObject("driver");
  ASSERT_TRUE(driver);
  EXPECT_EQ(driver->getString("name"), "mscalec");
  EXPECT_EQ(driver->getString("version"), "9.9.9");

  // Rules: one per code seen, in table order, each with its summary and its --explain text.
  const llvm::json::Array *rules = driver->getArray("rules");
  ASSERT_TRUE(rules && rules->size() == 2);
  EXPECT_EQ((*rules)[0].getAsObject()->getString("id"), "ERR_SYN_007");
  EXPECT_EQ((*rules)[1].getAsObject()->getString("id"), "ERR_SEM_004");
  EXPECT_EQ((*rules)[1].getAsObject()->getObject("shortDescription")->getString("text"),
            "a field name the section does not have");
  EXPECT_TRUE((*rules)[1].getAsObject()->getObject("fullDescription"));

  const llvm::json::Array *results = run->getArray("results");
  ASSERT_TRUE(results && results->size() == 2);
  const llvm::json::Object *r = (*results)[0].getAsObject();
  EXPECT_EQ(r->getString("ruleId"), "ERR_SEM_004");
  EXPECT_EQ(r->getString("level"), "error");
  EXPECT_EQ(r->getObject("message")->getString("text"), "unknown field 'numa_nod' in role 'data'");
  const llvm::json::Object *physical =
      (*r->getArray("locations"))[0].getAsObject()->getObject("physicalLocation");
  // Relative to %SRCROOT%, which is the working directory when no root is given.
  EXPECT_EQ(physical->getObject("artifactLocation")->getString("uri"), "t.msc");
  EXPECT_EQ(physical->getObject("artifactLocation")->getString("uriBaseId"), "%SRCROOT%");
  llvm::SmallString<256> cwd;
  ASSERT_FALSE(llvm::sys::fs::current_path(cwd));
  EXPECT_EQ(run->getObject("originalUriBaseIds")->getObject("%SRCROOT%")->getString("uri"),
            "file://" + std::string(cwd.str()) + (cwd.str() == "/" ? "" : "/"));
  const llvm::json::Object *region = physical->getObject("region");
  EXPECT_EQ(region->getInteger("startLine"), 2);
  EXPECT_EQ(region->getInteger("startColumn"), 24);
  EXPECT_EQ(region->getInteger("endLine"), 2);
  EXPECT_EQ(region->getInteger("endColumn"), 32);

  const llvm::json::Array *related = r->getArray("relatedLocations");
  ASSERT_TRUE(related && related->size() == 1);
  EXPECT_EQ((*related)[0].getAsObject()->getObject("message")->getString("text"), "did you mean 'numa_node'?");

  const llvm::json::Array *fixes = r->getArray("fixes");
  ASSERT_TRUE(fixes && fixes->size() == 1);
  const llvm::json::Object *change = (*(*fixes)[0].getAsObject()->getArray("artifactChanges"))[0].getAsObject();
  EXPECT_EQ(change->getObject("artifactLocation")->getString("uri"), "t.msc");
  EXPECT_EQ(change->getObject("artifactLocation")->getString("uriBaseId"), "%SRCROOT%");
  const llvm::json::Object *replacement = (*change->getArray("replacements"))[0].getAsObject();
  EXPECT_EQ(replacement->getObject("deletedRegion")->getInteger("startColumn"), 24);
  EXPECT_EQ(replacement->getObject("deletedRegion")->getInteger("endColumn"), 32);
  EXPECT_EQ(replacement->getObject("insertedContent")->getString("text"), "numa_node");

  // A file-level result has an artifact but no region.
  const llvm::json::Object *fileLevel = (*results)[1].getAsObject();
  EXPECT_EQ(fileLevel->getString("ruleId"), "ERR_SYN_007");
  const llvm::json::Object *fileLoc =
      (*fileLevel->getArray("locations"))[0].getAsObject()->getObject("physicalLocation");
  EXPECT_EQ(fileLoc->getObject("artifactLocation")->getString("uri"), "big.msc");
  EXPECT_FALSE(fileLoc->get("region"));
}

TEST_F(Printers, SarifWithoutLocationOrResults) {
  SarifDiagnosticPrinter printer(os, "mscalec", "1");
  DiagnosticEngine diags(&sm, printer);
  diags.report(DiagCode::ERR_DRV_002) << "BOGUS";
  diags.finish();
  auto parsed = llvm::json::parse(out);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object *r =
      (*(*parsed->getAsObject()->getArray("runs"))[0].getAsObject()->getArray("results"))[0].getAsObject();
  EXPECT_EQ(r->getString("ruleId"), "ERR_DRV_002");
  EXPECT_FALSE(r->get("locations"));

  std::string empty;
  llvm::raw_string_ostream eos(empty);
  SarifDiagnosticPrinter quiet(eos, "mscalec", "1");
  DiagnosticEngine none(&sm, quiet);
  none.finish();
  auto log = llvm::json::parse(empty);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  EXPECT_TRUE((*log->getAsObject()->getArray("runs"))[0].getAsObject()->getArray("results")->empty());
}

// Where each file goes: under the root it is relative (normalised, percent-encoded); outside it, or
// merely sharing the root's prefix, it is an absolute file:// URI; "<stdin>" is only described.
TEST_F(Printers, SarifUrisAreRelativeToTheSourceRoot) {
  SarifDiagnosticPrinter printer(os, "mscalec", "1", "/src/proj/");
  EXPECT_EQ(printer.sourceRoot(), "/src/proj");
  auto uriOf = [&](llvm::StringRef file) {
    SarifDiagnosticPrinter::Artifact a = printer.artifact(file);
    return (a.uri.empty() ? "(none)" : a.uri) + " " + (a.uriBaseId.empty() ? "-" : a.uriBaseId);
  };
  EXPECT_EQ(uriOf("/src/proj/contracts/a.msc"), "contracts/a.msc %SRCROOT%");
  EXPECT_EQ(uriOf("/src/proj/x/../my train#1.msc"), "my%20train%231.msc %SRCROOT%");
  EXPECT_EQ(uriOf("/src/other/b.msc"), "file:///src/other/b.msc -");
  EXPECT_EQ(uriOf("/src/projector/c.msc"), "file:///src/projector/c.msc -");
  EXPECT_EQ(uriOf("/src/proj/../shared/d.msc"), "file:///src/shared/d.msc -");
  EXPECT_EQ(uriOf("<stdin>"), "(none) -");
  EXPECT_EQ(printer.artifact("<stdin>").description, "<stdin>");

  // Through a whole log: the result's file is outside the root, the note's inside.
  unsigned inside = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy("profile p {}\n", "/src/proj/p.msc"),
                                          llvm::SMLoc());
  unsigned outside = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy("profile q {}\n", "/opt/q.msc"),
                                           llvm::SMLoc());
  auto at = [&](unsigned buffer) {
    const char *p = sm.getMemoryBuffer(buffer)->getBufferStart() + 8;
    return llvm::SMRange(llvm::SMLoc::getFromPointer(p), llvm::SMLoc::getFromPointer(p + 1));
  };
  DiagnosticEngine diags(&sm, printer);
  diags.report(DiagCode::ERR_SEM_010, at(outside)).note(Location{at(inside), {}, 0}, "here") << "x";
  diags.finish();
  auto parsed = llvm::json::parse(out);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object *run = (*parsed->getAsObject()->getArray("runs"))[0].getAsObject();
  EXPECT_EQ(run->getObject("originalUriBaseIds")->getObject("%SRCROOT%")->getString("uri"), "file:///src/proj/");
  const llvm::json::Object *r = (*run->getArray("results"))[0].getAsObject();
  const llvm::json::Object *where =
      (*r->getArray("locations"))[0].getAsObject()->getObject("physicalLocation")->getObject("artifactLocation");
  EXPECT_EQ(where->getString("uri"), "file:///opt/q.msc");
  EXPECT_FALSE(where->get("uriBaseId"));
  const llvm::json::Object *note = (*r->getArray("relatedLocations"))[0].getAsObject()->getObject(
      "physicalLocation")->getObject("artifactLocation");
  EXPECT_EQ(note->getString("uri"), "p.msc");
  EXPECT_EQ(note->getString("uriBaseId"), "%SRCROOT%");
}

TEST(PrinterFactory, MakesEachFormat) {
  std::string out;
  llvm::raw_string_ostream os(out);
  EXPECT_TRUE(dynamic_cast<TextDiagnosticPrinter *>(makeDiagnosticPrinter(DiagnosticsFormat::Text, os, "t", "1").get()));
  EXPECT_TRUE(dynamic_cast<JsonDiagnosticPrinter *>(makeDiagnosticPrinter(DiagnosticsFormat::Json, os, "t", "1").get()));
  EXPECT_TRUE(
      dynamic_cast<SarifDiagnosticPrinter *>(makeDiagnosticPrinter(DiagnosticsFormat::Sarif, os, "t", "1").get()));
}

} // namespace
} // namespace msc
