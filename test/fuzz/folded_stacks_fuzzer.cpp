// Fuzzes the folded-stack reader behind `mscale-trace render --folded FILE` (a file anyone may hand
// over) and everything drawn from what it accepts: the frame tree, the SVG and the speedscope JSON.
// Nothing may crash, hang or leak; whatever parses must write back to text that parses to the same
// stacks.
#include "render/FlameGraphSvg.h"
#include "render/FoldedStacks.h"
#include "render/FrameTree.h"
#include "render/Speedscope.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace msc::render;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  FoldedParseError error;
  std::optional<FoldedProfile> profile = parseFolded(text, error);
  if (!profile) {
    if (error.line == 0 || error.message.empty())
      std::abort();
    return 0;
  }
  std::string folded;
  llvm::raw_string_ostream os(folded);
  writeFolded(*profile, os);
  std::optional<FoldedProfile> again = parseFolded(os.str(), error);
  if (!again || again->stacks.size() != profile->stacks.size())
    std::abort();
  for (size_t i = 0; i < profile->stacks.size(); ++i) {
    const FoldedStack &a = profile->stacks[i], &b = again->stacks[i];
    if (a.frames != b.frames || a.count != b.count || a.implicitSync != b.implicitSync)
      std::abort();
  }
  FrameTree tree = buildFrameTree(*profile, {"cuStreamSynchronize", "cuCtxSynchronize"});
  if (tree.root.count != profile->totalCount())
    std::abort();
  std::string out;
  llvm::raw_string_ostream sink(out);
  writeFlameGraphSvg(tree, FlameGraphOptions{}, sink);
  writeSpeedscope(*profile, SpeedscopeOptions{}, sink);
  return 0;
}
