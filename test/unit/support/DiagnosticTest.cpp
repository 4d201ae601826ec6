// The diagnostics engine: the table, formatting, counting, the error limit, warnings as errors,
// locations, and "did you mean".
#include "support/Diagnostic.h"
#include "support/ErrorIndex.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include <gtest/gtest.h>

namespace msc {
namespace {

TEST(FormatDiag, SubstitutesArgumentsByIndex) {
  EXPECT_EQ(formatDiag("unknown field '%0' in %1", {"numa_nod", "role 'data'"}),
            "unknown field 'numa_nod' in role 'data'");
  EXPECT_EQ(formatDiag("%1 before %0, %0 again", {"a", "b"}), "b before a, a again");
  EXPECT_EQ(formatDiag("ten args: %9", {"0", "1", "2", "3", "4", "5", "6", "7", "8", "nine"}), "ten args: nine");
}

TEST(FormatDiag, LeavesOtherPercentSignsAlone) {
  EXPECT_EQ(formatDiag("15% of %0", {"x"}), "15% of x");
  EXPECT_EQ(formatDiag("trailing %", {}), "trailing %");
  EXPECT_EQ(formatDiag("%x%", {}), "%x%");
}

TEST(FormatDiag, MissingArgumentsBecomeEmpty) {
  EXPECT_EQ(formatDiag("a '%0' b '%1'", {"x"}), "a 'x' b ''");
  EXPECT_EQ(formatDiag("", {"x"}), "");
}

TEST(DiagTable, NamesRoundTrip) {
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::NumCodes); ++i) {
    auto code = static_cast<DiagCode>(i);
    const DiagInfo &info = diagInfo(code);
    ASSERT_FALSE(info.name.empty());
    EXPECT_EQ(lookupDiagCode(info.name), code) << info.name.str();
    EXPECT_FALSE(info.summary.empty()) << info.name.str();
    // Style: short, no trailing period.
    EXPECT_FALSE(info.format.ends_with(".")) << info.name.str();
  }
}

TEST(DiagTable, KnowsFrontendCodes) {
  EXPECT_EQ(diagInfo(DiagCode::ERR_SEM_004).name, "ERR_SEM_004");
  EXPECT_EQ(diagInfo(DiagCode::ERR_SEM_004).severity, Severity::Error);
  EXPECT_EQ(diagInfo(DiagCode::ERR_SEM_004).format, "unknown field '%0' in %1");
  EXPECT_EQ(lookupDiagCode("err_sem_004"), DiagCode::ERR_SEM_004);
  EXPECT_FALSE(lookupDiagCode("ERR_SEM_999"));
  EXPECT_FALSE(lookupDiagCode(""));
  EXPECT_EQ(severityName(Severity::Error), "error");
  EXPECT_EQ(severityName(Severity::Warning), "warning");
  EXPECT_EQ(severityName(Severity::Note), "note");
}

TEST(ErrorIndex, ExplainsEveryCode) {
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::NumCodes); ++i) {
    llvm::StringRef name = diagInfo(static_cast<DiagCode>(i)).name;
    auto text = explainText(name);
    ASSERT_TRUE(text) << name.str();
    EXPECT_TRUE(llvm::StringRef(*text).starts_with(name.str() + "\n")) << name.str();
  }
  EXPECT_TRUE(explainText("err_syn_001"));
  EXPECT_FALSE(explainText("BOGUS"));
}

// A code of the table with the given severity, if the table has one.
std::optional<DiagCode> anyCodeWithSeverity(Severity severity) {
  for (size_t i = 0; i < static_cast<size_t>(DiagCode::NumCodes); ++i)
    if (diagInfo(static_cast<DiagCode>(i)).severity == severity)
      return static_cast<DiagCode>(i);
  return std::nullopt;
}

TEST(DiagnosticEngine, BuildsTheMessageWhenTheBuilderDies) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  {
    DiagBuilder d = diags.report(DiagCode::ERR_SEM_009);
    d << int64_t(-3) << "io_depth" << uint64_t(7) << 5 << 6u;
    EXPECT_TRUE(consumer.diags.empty()) << "emitted before the builder was done";
  }
  ASSERT_EQ(consumer.diags.size(), 1u);
  EXPECT_EQ(consumer.diags[0].message, "value -3 of 'io_depth' is out of range (7)");
  EXPECT_EQ(consumer.diags[0].code, DiagCode::ERR_SEM_009);
  EXPECT_EQ(consumer.diags[0].severity, Severity::Error);
  EXPECT_EQ(diags.errorCount(), 1u);
  EXPECT_TRUE(diags.hasErrors());
}

TEST(DiagnosticEngine, MovedBuilderEmitsOnce) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  {
    DiagBuilder first = diags.report(DiagCode::ERR_SEM_010);
    first << "x.msc";
    DiagBuilder second(std::move(first));
  }
  ASSERT_EQ(consumer.diags.size(), 1u);
  EXPECT_EQ(consumer.diags[0].message, "cannot find import 'x.msc'");
}

TEST(DiagnosticEngine, CarriesNotesAndFixIts) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  diags.report(DiagCode::ERR_SEM_004, Location{{}, "f.msc", 3})
          .note(Location::none(), "plain note")
          .noteWithFixIt(Location::none(), "did you mean 'numa_node'?", {{}, "numa_node"})
          .fixIt({{}, ";"})
      << "numa_nod" << "role 'data'";
  ASSERT_EQ(consumer.diags.size(), 1u);
  const Diagnostic &d = consumer.diags[0];
  EXPECT_EQ(d.loc.file, "f.msc");
  EXPECT_EQ(d.loc.line, 3u);
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_EQ(d.notes[0].message, "plain note");
  EXPECT_TRUE(d.notes[0].fixits.empty());
  ASSERT_EQ(d.notes[1].fixits.size(), 1u);
  EXPECT_EQ(d.notes[1].fixits[0].replacement, "numa_node");
  ASSERT_EQ(d.fixits.size(), 1u);
  EXPECT_EQ(d.fixits[0].replacement, ";");
}

TEST(DiagnosticEngine, ErrorLimitStopsPrintingButKeepsCounting) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  diags.setErrorLimit(2);
  for (int i = 0; i < 5; ++i)
    diags.report(DiagCode::ERR_SEM_010) << std::to_string(i);
  ASSERT_EQ(consumer.diags.size(), 3u);
  EXPECT_EQ(consumer.diags[0].message, "cannot find import '0'");
  EXPECT_EQ(consumer.diags[1].message, "cannot find import '1'");
  EXPECT_EQ(consumer.diags[2].code, DiagCode::ERR_DRV_003);
  EXPECT_EQ(consumer.diags[2].message, "too many errors emitted (limit 2), stopping now");
  EXPECT_EQ(diags.errorCount(), 5u);
}

TEST(DiagnosticEngine, ErrorLimitZeroMeansNoLimit) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  diags.setErrorLimit(0);
  for (int i = 0; i < 100; ++i)
    diags.report(DiagCode::ERR_SEM_010) << "x";
  EXPECT_EQ(consumer.diags.size(), 100u);
  EXPECT_FALSE(diags.emitted(DiagCode::ERR_DRV_003));
}

TEST(DiagnosticEngine, ErrorLimitDoesNotSilenceNotesOrWarnings) {
  auto warning = anyCodeWithSeverity(Severity::Warning);
  if (!warning)
    GTEST_SKIP() << "the diagnostics table has no warning";
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  diags.setErrorLimit(1);
  diags.report(DiagCode::ERR_SEM_010) << "a";
  diags.report(DiagCode::ERR_SEM_010) << "b";
  diags.report(*warning);
  ASSERT_EQ(consumer.diags.size(), 3u); // error, the limit, the warning
  EXPECT_EQ(consumer.diags[2].severity, Severity::Warning);
  EXPECT_EQ(diags.warningCount(), 1u);
}

TEST(DiagnosticEngine, EmittedRemembersCodesEvenPastTheLimit) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  diags.setErrorLimit(1);
  EXPECT_FALSE(diags.emitted(DiagCode::ERR_DRV_001));
  diags.report(DiagCode::ERR_SEM_004) << "a" << "b";
  diags.report(DiagCode::ERR_DRV_001) << "f" << "gone"; // past the limit: not printed ...
  EXPECT_EQ(consumer.diags.size(), 2u);
  EXPECT_TRUE(diags.emitted(DiagCode::ERR_DRV_001)); // ... but still decides the exit status
  EXPECT_TRUE(diags.emitted(DiagCode::ERR_SEM_004));
  EXPECT_FALSE(diags.emitted(DiagCode::ERR_SEM_005));
}

TEST(DiagnosticEngine, WarningsAsErrors) {
  auto warning = anyCodeWithSeverity(Severity::Warning);
  if (!warning)
    GTEST_SKIP() << "the diagnostics table has no warning";
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  diags.report(*warning);
  EXPECT_EQ(diags.warningCount(), 1u);
  EXPECT_FALSE(diags.hasErrors());
  ASSERT_EQ(consumer.diags.size(), 1u);
  EXPECT_EQ(consumer.diags[0].severity, Severity::Warning);

  diags.setWarningsAsErrors(true);
  diags.report(*warning);
  EXPECT_EQ(diags.warningCount(), 1u);
  EXPECT_EQ(diags.errorCount(), 1u);
  ASSERT_EQ(consumer.diags.size(), 2u);
  EXPECT_EQ(consumer.diags[1].severity, Severity::Error);
  EXPECT_EQ(consumer.diags[1].code, *warning) << "the code stays the warning's";
}

class WithSource : public ::testing::Test {
protected:
  unsigned add(llvm::StringRef text, llvm::StringRef name = "f.msc") {
    return sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  }
  llvm::SMRange rangeOf(unsigned id, llvm::StringRef needle) {
    llvm::StringRef text = sm.getMemoryBuffer(id)->getBuffer();
    size_t at = text.find(needle);
    EXPECT_NE(at, llvm::StringRef::npos) << needle.str();
    const char *p = text.data() + at;
    return {llvm::SMLoc::getFromPointer(p), llvm::SMLoc::getFromPointer(p + needle.size())};
  }
  llvm::SourceMgr sm;
};

TEST_F(WithSource, ResolvesOneBasedLinesAndExclusiveEndColumns) {
  unsigned id = add("profile p {\n  numa_nod = 1;\n}\n");
  ResolvedLoc r = resolve(rangeOf(id, "numa_nod"), &sm);
  EXPECT_EQ(r.file, "f.msc");
  EXPECT_EQ(r.line, 2u);
  EXPECT_EQ(r.column, 3u);
  EXPECT_EQ(r.endLine, 2u);
  EXPECT_EQ(r.endColumn, 11u);
}

TEST_F(WithSource, ResolvesAnEmptyRangeToItsStart) {
  unsigned id = add("abc");
  llvm::SMRange range = rangeOf(id, "b");
  ResolvedLoc r = resolve(llvm::SMRange(range.Start, range.Start), &sm);
  EXPECT_EQ(r.column, 2u);
  EXPECT_EQ(r.endColumn, 2u);
}

TEST_F(WithSource, FileOnlyLocations) {
  ResolvedLoc r = resolve(Location{{}, "big.msc", 0}, &sm);
  EXPECT_EQ(r.file, "big.msc");
  EXPECT_EQ(r.line, 0u);
  EXPECT_EQ(r.column, 0u);
  r = resolve(Location{{}, "bin.msc", 4}, &sm);
  EXPECT_EQ(r.line, 4u);
  EXPECT_EQ(r.column, 0u);
  r = resolve(Location::none(), nullptr);
  EXPECT_TRUE(r.file.empty());
}

TEST(ClosestMatch, SuggestsWithinOneEditInThree) {
  std::vector<llvm::StringRef> fields = {"cpu_cores", "numa_node", "io_depth", "decoder"};
  EXPECT_EQ(closestMatch("numa_nod", fields), "numa_node");
  EXPECT_EQ(closestMatch("cpu_core", fields), "cpu_cores");
  EXPECT_EQ(closestMatch("io_detph", fields), "io_depth");
  EXPECT_FALSE(closestMatch("threads", fields));
  EXPECT_FALSE(closestMatch("", fields));
  EXPECT_FALSE(closestMatch("numa_nod", {}));
}

TEST(ClosestMatch, NeverSuggestsTheWordItself) {
  EXPECT_FALSE(closestMatch("numa_node", {"numa_node"}));
  EXPECT_EQ(closestMatch("ab", {"ab", "ac"}), "ac");
}

TEST(ClosestMatch, ShortWordsAllowOneEdit) {
  EXPECT_EQ(closestMatch("s", {"h"}), "h");
  EXPECT_FALSE(closestMatch("ms", {"min"}));
  EXPECT_EQ(closestMatch("Mib", {"B", "KiB", "MiB", "GiB"}), "MiB");
}

TEST(ClosestMatch, RanksByDistanceThenOrder) {
  std::vector<llvm::StringRef> candidates = {"mlvm_heavy", "mlvm_light", "mlvm_lights"};
  EXPECT_EQ(closestMatches("mlvm_lihgt", candidates, 3), (std::vector<std::string>{"mlvm_light", "mlvm_lights"}));
  EXPECT_EQ(closestMatches("mlvm_lihgt", candidates, 1), (std::vector<std::string>{"mlvm_light"}));
  EXPECT_EQ(closestMatches("aaaa", {"aaab", "aaac"}, 5), (std::vector<std::string>{"aaab", "aaac"}));
  EXPECT_TRUE(closestMatches("mlvm_lihgt", candidates, 0).empty());
}

} // namespace
} // namespace msc
