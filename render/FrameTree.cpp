#include "render/FrameTree.h"

#include <algorithm>

namespace msc::render {

llvm::StringRef frameKindName(FrameKind kind) {
  switch (kind) {
  case FrameKind::Ordinary: return "ordinary";
  case FrameKind::Sync: return "sync";
  case FrameKind::ImplicitSync: return "implicit-sync";
  }
  return "?";
}

FrameTree buildFrameTree(const FoldedProfile &profile, const std::set<std::string, std::less<>> &syncCalls) {
  FrameTree tree;
  tree.root.name = "all";
  tree.hasTimes = profile.hasTimes();
  for (const FoldedStack &s : profile.stacks) {
    uint64_t ns = s.totalNs.value_or(0);
    FrameNode *node = &tree.root;
    node->count += s.count;
    node->ns += ns;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      FrameKind kind = FrameKind::Ordinary;
      if (i + 1 == s.frames.size()) {
        if (s.implicitSync)
          kind = FrameKind::ImplicitSync;
        else if (syncCalls.count(s.frames[i]))
          kind = FrameKind::Sync;
      }
      std::unique_ptr<FrameNode> &child = node->children[{s.frames[i], kind}];
      if (!child) {
        child = std::make_unique<FrameNode>();
        child->name = s.frames[i];
        child->kind = kind;
        ++tree.frames;
      }
      node = child.get();
      node->count += s.count;
      node->ns += ns;
    }
    tree.depth = std::max<unsigned>(tree.depth, static_cast<unsigned>(s.frames.size()));
  }
  return tree;
}

} // namespace msc::render
