// Folded stacks, the input of flame graphs: "outer;...;inner count" per line, as `mscale-trace
// --folded` writes them (and as perf and bpftrace scripts do). Kept apart from rendering so that a
// file recorded on another machine renders exactly like a live trace, without BPF.
//
// One extension, in the annotation style flame-graph tools already use for frames (`_[k]`): a leaf
// frame ending in `_[implicit-sync]` is a CUDA call that synchronised implicitly (see
// bpf/TraceResults.h, ImplicitSync). Tools that do not know it show it as part of the name.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::render {

inline constexpr llvm::StringLiteral kImplicitSyncSuffix = "_[implicit-sync]";
// Deeper stacks are refused: the kernel keeps at most 127 user frames, and everything after the
// parser (the tree, the drawing) recurses once per frame.
inline constexpr size_t kMaxFoldedDepth = 4096;

struct FoldedStack {
  std::vector<std::string> frames; // outermost first; the leaf is the CUDA call
  uint64_t count = 0;              // calls with exactly this stack
  std::optional<uint64_t> totalNs; // time spent in those calls, when the source measured it
  bool implicitSync = false;       // the leaf call synchronised implicitly
};

struct FoldedProfile {
  std::vector<FoldedStack> stacks;
  uint64_t totalCount() const;
  // True when every stack carries its time, so times can be summed up the tree.
  bool hasTimes() const;
};

struct FoldedParseError {
  unsigned line = 0; // 1-based
  std::string message;
};

// Parses folded text. Blank lines are skipped; every other line must be "stack count" with a
// non-empty stack, no empty frame, at most kMaxFoldedDepth frames and a decimal count (the last
// space separates them, as in every flame-graph tool). Stops at the first bad line, saying why.
std::optional<FoldedProfile> parseFolded(llvm::StringRef text, FoldedParseError &error);

// Writes the profile back as folded text (implicit syncs annotated); parseFolded reads it back.
void writeFolded(const FoldedProfile &profile, llvm::raw_ostream &os);

} // namespace msc::render
