#include "render/FlameGraphSvg.h"
#include "render/FrameTree.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace msc::render;

namespace {

FoldedProfile profile(std::initializer_list<std::pair<const char *, uint64_t>> lines) {
  std::string text;
  for (auto &[stack, count] : lines)
    text += std::string(stack) + " " + std::to_string(count) + "\n";
  FoldedParseError error;
  return parseFolded(text, error).value();
}

const FrameNode *child(const FrameNode &n, const std::string &name, FrameKind kind = FrameKind::Ordinary) {
  auto it = n.children.find({name, kind});
  return it == n.children.end() ? nullptr : it->second.get();
}

TEST(FrameTree, MergesCommonPrefixesAndSumsCountsAndTimes) {
  FoldedProfile p = profile({{"t;main;step;cuLaunchKernel", 4}, {"t;main;step;cuStreamSynchronize", 1},
                             {"t;main;init;cuMemAlloc_v2", 2}, {"t;main;step;cuMemcpyAsync_[implicit-sync]", 3}});
  p.stacks[0].totalNs = 400;
  p.stacks[1].totalNs = 5000;
  p.stacks[2].totalNs = 60;
  p.stacks[3].totalNs = 9000;
  FrameTree tree = buildFrameTree(p, {"cuStreamSynchronize"});
  EXPECT_TRUE(tree.hasTimes);
  EXPECT_EQ(tree.root.count, 10u);
  EXPECT_EQ(tree.root.ns, 14460u);
  EXPECT_EQ(tree.depth, 4u);
  EXPECT_EQ(tree.frames, 8u); // t, main, step, init and four leaves
  const FrameNode *step = child(*child(*child(tree.root, "t"), "main"), "step");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->count, 8u);
  EXPECT_EQ(step->ns, 14400u);
  EXPECT_EQ(step->children.size(), 3u);
  ASSERT_TRUE(child(*step, "cuStreamSynchronize", FrameKind::Sync));
  ASSERT_TRUE(child(*step, "cuMemcpyAsync", FrameKind::ImplicitSync));
  EXPECT_EQ(child(*step, "cuMemcpyAsync", FrameKind::ImplicitSync)->count, 3u);
  ASSERT_TRUE(child(*step, "cuLaunchKernel"));
}

TEST(FrameTree, OnlyLeavesTakeTheSyncKind) {
  // A frame named like a sync call but with callees is the caller's own function, not the call.
  FoldedProfile p = profile({{"cuStreamSynchronize;inner", 1}, {"a;cuStreamSynchronize", 1}});
  FrameTree tree = buildFrameTree(p, {"cuStreamSynchronize"});
  EXPECT_TRUE(child(tree.root, "cuStreamSynchronize"));
  EXPECT_TRUE(child(*child(tree.root, "a"), "cuStreamSynchronize", FrameKind::Sync));
  EXPECT_FALSE(tree.hasTimes);
}

TEST(FlameGraphColours, ThePalettesDoNotOverlap) {
  // Every name lands in its kind's palette; the palettes are disjoint, so a sync frame can never
  // look like an ordinary one.
  for (int i = 0; i < 2000; ++i) {
    std::string name = "frame" + std::to_string(i);
    int r[3], g[3], b[3];
    FrameKind kinds[] = {FrameKind::Ordinary, FrameKind::Sync, FrameKind::ImplicitSync};
    for (int k = 0; k < 3; ++k)
      ASSERT_EQ(std::sscanf(frameColour(name, kinds[k]).c_str(), "rgb(%d,%d,%d)", &r[k], &g[k], &b[k]), 3);
    EXPECT_GE(r[0], 205);
    EXPECT_LE(b[0], 54);
    EXPECT_LE(r[1], 119);
    EXPECT_GE(b[1], 220);
    EXPECT_GE(r[2], 150);
    EXPECT_LE(r[2], 189);
    EXPECT_LE(g[2], 79);
  }
  EXPECT_EQ(frameColour("x", FrameKind::Sync), frameColour("x", FrameKind::Sync));
}

} // namespace

namespace {

TEST(FlameGraphSvg, LeavesOutFramesNarrowerThanTheMinimumAndSaysHowMany) {
  // 1 call in 100,000 is 0.0118 px of 1180: it and the two frames above it are left out.
  FoldedProfile p = profile({{"t;main;cuLaunchKernel", 99999}, {"t;rare;deeper;cuMemAlloc_v2", 1}});
  FrameTree tree = buildFrameTree(p, {});
  std::string out;
  llvm::raw_string_ostream os(out);
  writeFlameGraphSvg(tree, FlameGraphOptions{}, os);
  EXPECT_NE(os.str().find("100000 calls; width = share of the calls; 3 frames narrower than 0.1 px not drawn"),
            std::string::npos);
  EXPECT_EQ(os.str().find("<title>rare"), std::string::npos);
  EXPECT_NE(os.str().find("<title>main"), std::string::npos);
  // With no minimum every frame is drawn.
  FlameGraphOptions all;
  all.minFrameWidthPx = 0;
  std::string everything;
  llvm::raw_string_ostream os2(everything);
  writeFlameGraphSvg(tree, all, os2);
  EXPECT_NE(os2.str().find("<title>rare"), std::string::npos);
  EXPECT_EQ(os2.str().find("not drawn"), std::string::npos);
}

} // namespace
