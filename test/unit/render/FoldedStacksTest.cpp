#include "render/FoldedStacks.h"

#include <gtest/gtest.h>

using namespace msc::render;

namespace {

FoldedProfile parseOk(llvm::StringRef text) {
  FoldedParseError error;
  std::optional<FoldedProfile> p = parseFolded(text, error);
  EXPECT_TRUE(p) << "line " << error.line << ": " << error.message;
  return p.value_or(FoldedProfile{});
}

FoldedParseError parseBad(llvm::StringRef text) {
  FoldedParseError error;
  EXPECT_FALSE(parseFolded(text, error));
  return error;
}

TEST(FoldedStacks, ParsesStacksCountsAndTheImplicitSyncMark) {
  FoldedProfile p = parseOk("a;b;cuLaunchKernel 3\n\r\nx;cuMemcpyAsync_[implicit-sync] 2\r\nsolo 1");
  ASSERT_EQ(p.stacks.size(), 3u);
  EXPECT_EQ(p.stacks[0].frames, (std::vector<std::string>{"a", "b", "cuLaunchKernel"}));
  EXPECT_EQ(p.stacks[0].count, 3u);
  EXPECT_FALSE(p.stacks[0].implicitSync);
  EXPECT_EQ(p.stacks[1].frames, (std::vector<std::string>{"x", "cuMemcpyAsync"}));
  EXPECT_TRUE(p.stacks[1].implicitSync);
  EXPECT_EQ(p.stacks[2].frames, (std::vector<std::string>{"solo"}));
  EXPECT_EQ(p.totalCount(), 6u);
  EXPECT_FALSE(p.hasTimes());
}

TEST(FoldedStacks, TheCountIsAfterTheLastSpace) {
  // Frame names may hold spaces (flame-graph tools split at the last one only).
  FoldedProfile p = parseOk("a b;operator() (int) 7\n");
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks[0].frames, (std::vector<std::string>{"a b", "operator() (int)"}));
  EXPECT_EQ(p.stacks[0].count, 7u);
}

TEST(FoldedStacks, RefusesMalformedLinesWithTheirNumber) {
  FoldedParseError e = parseBad("a;b 1\nno-count\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.message, "no count: expected 'frame;frame;... count'");
  e = parseBad("a;b -1\n");
  EXPECT_EQ(e.message, "'-1' is not a whole number of calls");
  e = parseBad("a;b 1.5\n");
  EXPECT_EQ(e.message, "'1.5' is not a whole number of calls");
  e = parseBad(" 4\n");
  EXPECT_EQ(e.message, "the stack before the count is empty");
  e = parseBad("a;;b 4\n");
  EXPECT_EQ(e.message, "frame 2 of the stack is empty");
  e = parseBad("a; 4\n");
  EXPECT_EQ(e.message, "frame 2 of the stack is empty");
  e = parseBad("a 18446744073709551615\nb 1\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.message, "the counts add up to more than 2^64");
}

TEST(FoldedStacks, RefusesStacksDeeperThanTheLimit) {
  std::string deep;
  for (size_t i = 0; i <= kMaxFoldedDepth; ++i)
    deep += "f;";
  deep += "leaf 1\n";
  FoldedParseError e = parseBad(deep);
  EXPECT_EQ(e.message, "the stack has 4098 frames, more than 4096");
}

TEST(FoldedStacks, WritesWhatItReads) {
  std::string text = "a;b;cuLaunchKernel 3\nx;cuMemcpyAsync_[implicit-sync] 2\n";
  FoldedProfile p = parseOk(text);
  std::string out;
  llvm::raw_string_ostream os(out);
  writeFolded(p, os);
  EXPECT_EQ(os.str(), text);
}

TEST(FoldedStacks, AnOnlyMarkIsAFrameName) {
  // "_[implicit-sync]" alone names a frame; it does not mark an empty one.
  FoldedProfile p = parseOk("_[implicit-sync] 1\n");
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks[0].frames.back(), "_[implicit-sync]");
  EXPECT_FALSE(p.stacks[0].implicitSync);
}

} // namespace
