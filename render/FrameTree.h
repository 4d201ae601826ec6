// The folded stacks merged into one tree of frames: a node per distinct path from the root, holding
// the calls (and, when measured, the time) at or below it. The flame graph draws this tree; each
// node's width is its share of the calls.
#pragma once

#include "render/FoldedStacks.h"

#include <llvm/ADT/StringRef.h>

#include <map>
#include <memory>
#include <set>
#include <string>

namespace msc::render {

enum class FrameKind : uint8_t {
  Ordinary,
  Sync,         // a call that waits for the device by definition (cuStreamSynchronize, cuMemcpy, ...)
  ImplicitSync, // an asynchronous call that waited for the device anyway
};
llvm::StringRef frameKindName(FrameKind kind);

struct FrameNode {
  std::string name;
  FrameKind kind = FrameKind::Ordinary;
  uint64_t count = 0; // calls at or below this frame
  uint64_t ns = 0;    // their time (meaningful when the tree has times)
  // Ordered by name (then kind), as flame graphs sort siblings: the same input draws the same picture.
  std::map<std::pair<std::string, FrameKind>, std::unique_ptr<FrameNode>> children;
};

struct FrameTree {
  FrameNode root; // "all"
  bool hasTimes = false;
  size_t frames = 0;  // nodes below the root
  unsigned depth = 0; // longest stack
};

// `syncCalls` names the calls that synchronise by definition; a leaf frame with such a name is a
// Sync frame. Leaves of stacks marked implicitSync are ImplicitSync frames.
FrameTree buildFrameTree(const FoldedProfile &profile, const std::set<std::string, std::less<>> &syncCalls);

} // namespace msc::render
