#include "tools/mscale-trace/FlameOutputs.h"

#include "bpf/CudaFunctions.h"
#include "render/FlameGraphSvg.h"
#include "render/FrameTree.h"
#include "render/Speedscope.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>

namespace msc::tracetool {

namespace {

// The calls the tracer knows to wait for the device by definition (bpf/CudaFunctions.cpp).
std::set<std::string, std::less<>> synchronisingCalls() {
  std::set<std::string, std::less<>> names;
  for (const trace::CudaFunction &f : trace::cudaFunctions())
    if (f.kind == trace::CallKind::Sync || f.kind == trace::CallKind::SyncCopy)
      names.insert(f.name.str());
  return names;
}

// An implicit sync's call site as the tail of a folded line: "outer;...;inner;cuFn", spaced as the
// tracer folds them (TraceSession replaces spaces with '_').
std::string foldedTail(const trace::ImplicitSync &s) {
  std::string tail;
  for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it)
    tail += *it + ";";
  tail += s.function;
  std::replace(tail.begin(), tail.end(), ' ', '_');
  return tail;
}

bool writeFile(const std::string &path, DiagnosticEngine &diags, const std::function<void(llvm::raw_ostream &)> &body) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_Text);
  if (!ec) {
    body(out);
    out.close();
    ec = out.error();
    out.clear_error();
  }
  if (ec) {
    diags.report(DiagCode::ERR_DRV_004) << path << ec.message();
    return false;
  }
  return true;
}

} // namespace

render::FoldedProfile foldedProfileOf(const trace::TraceResults &results) {
  std::vector<std::string> syncTails;
  for (const trace::ImplicitSync &s : results.implicitSyncs)
    syncTails.push_back(foldedTail(s));
  render::FoldedProfile profile;
  for (const auto &[line, count] : results.folded) {
    render::FoldedStack s;
    llvm::SmallVector<llvm::StringRef, 32> frames;
    llvm::StringRef(line).split(frames, ';');
    for (llvm::StringRef f : frames)
      s.frames.push_back(f.str());
    s.count = count;
    auto ns = results.foldedNs.find(line);
    if (ns != results.foldedNs.end())
      s.totalNs = ns->second;
    // The line is "comm;<tail>": the comm is the first frame, the rest must be the call site exactly.
    llvm::StringRef afterComm = llvm::StringRef(line).split(';').second;
    s.implicitSync = std::find(syncTails.begin(), syncTails.end(), afterComm) != syncTails.end();
    profile.stacks.push_back(std::move(s));
  }
  return profile;
}

bool writeFlameOutputs(const render::FoldedProfile &profile, const FlameOutputs &outputs, DiagnosticEngine &diags) {
  bool ok = true;
  if (!outputs.svgPath.empty()) {
    render::FrameTree tree = render::buildFrameTree(profile, synchronisingCalls());
    render::FlameGraphOptions options;
    options.title = outputs.title;
    options.subtitle = outputs.subtitle;
    ok &= writeFile(outputs.svgPath, diags,
                    [&](llvm::raw_ostream &os) { render::writeFlameGraphSvg(tree, options, os); });
  }
  if (!outputs.speedscopePath.empty()) {
    render::SpeedscopeOptions options;
    options.name = outputs.title;
    ok &= writeFile(outputs.speedscopePath, diags,
                    [&](llvm::raw_ostream &os) { render::writeSpeedscope(profile, options, os); });
  }
  return ok;
}

int renderFoldedFile(const std::string &foldedPath, const FlameOutputs &outputs, DiagnosticEngine &diags) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(foldedPath, /*IsText=*/true);
  if (!buffer) {
    diags.report(DiagCode::ERR_DRV_001) << foldedPath << buffer.getError().message();
    return 2;
  }
  render::FoldedParseError error;
  std::optional<render::FoldedProfile> profile = render::parseFolded((*buffer)->getBuffer(), error);
  if (!profile) {
    Location where;
    where.file = foldedPath;
    where.line = error.line;
    diags.report(DiagCode::ERR_RENDER_001, where) << error.message;
    return 1;
  }
  return writeFlameOutputs(*profile, outputs, diags) ? 0 : 2;
}

} // namespace msc::tracetool
