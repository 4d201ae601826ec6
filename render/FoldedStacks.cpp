#include "render/FoldedStacks.h"

#include <llvm/ADT/SmallVector.h>

#include <limits>

namespace msc::render {

uint64_t FoldedProfile::totalCount() const {
  uint64_t n = 0;
  for (const FoldedStack &s : stacks)
    n += s.count;
  return n;
}

bool FoldedProfile::hasTimes() const {
  if (stacks.empty())
    return false;
  for (const FoldedStack &s : stacks)
    if (!s.totalNs)
      return false;
  return true;
}

std::optional<FoldedProfile> parseFolded(llvm::StringRef text, FoldedParseError &error) {
  FoldedProfile profile;
  uint64_t total = 0;
  unsigned lineNo = 0;
  auto fail = [&](std::string message) {
    error.line = lineNo;
    error.message = std::move(message);
    return std::nullopt;
  };
  while (!text.empty()) {
    auto [raw, rest] = text.split('\n');
    text = rest;
    ++lineNo;
    llvm::StringRef line = raw.rtrim("\r\t ");
    if (line.empty())
      continue;
    size_t space = line.find_last_of(' ');
    if (space == llvm::StringRef::npos)
      return fail("no count: expected 'frame;frame;... count'");
    llvm::StringRef stack = line.take_front(space).rtrim(' ');
    llvm::StringRef countText = line.drop_front(space + 1);
    uint64_t count = 0;
    if (countText.empty() || countText.getAsInteger(10, count))
      return fail("'" + countText.str() + "' is not a whole number of calls");
    if (stack.empty())
      return fail("the stack before the count is empty");
    if (count > std::numeric_limits<uint64_t>::max() - total)
      return fail("the counts add up to more than 2^64");
    total += count;
    FoldedStack s;
    s.count = count;
    llvm::SmallVector<llvm::StringRef, 32> frames;
    stack.split(frames, ';');
    for (llvm::StringRef f : frames) {
      if (f.empty())
        return fail("frame " + std::to_string(s.frames.size() + 1) + " of the stack is empty");
      s.frames.push_back(f.str());
    }
    if (s.frames.size() > kMaxFoldedDepth)
      return fail("the stack has " + std::to_string(s.frames.size()) + " frames, more than " +
                  std::to_string(kMaxFoldedDepth));
    std::string &leaf = s.frames.back();
    if (llvm::StringRef(leaf).ends_with(kImplicitSyncSuffix) && leaf.size() > kImplicitSyncSuffix.size()) {
      leaf.resize(leaf.size() - kImplicitSyncSuffix.size());
      s.implicitSync = true;
    }
    profile.stacks.push_back(std::move(s));
  }
  return profile;
}

void writeFolded(const FoldedProfile &profile, llvm::raw_ostream &os) {
  for (const FoldedStack &s : profile.stacks) {
    for (size_t i = 0; i < s.frames.size(); ++i)
      os << (i ? ";" : "") << s.frames[i];
    if (s.implicitSync)
      os << kImplicitSyncSuffix;
    os << " " << s.count << "\n";
  }
}

} // namespace msc::render
