#include "cluster/config/ConfigSource.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace msc::cluster {

ConfigSource::ConfigSource(std::string name, llvm::StringRef text) : name_(std::move(name)) {
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(text, name_);
  text_ = buffer->getBuffer();
  sm_.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
}

namespace {
bool inside(llvm::StringRef text, llvm::SMLoc loc) {
  const char *p = loc.getPointer();
  return p && p >= text.begin() && p <= text.end();
}
} // namespace

void ConfigSource::print(llvm::SourceMgr::DiagKind kind, const std::string &message, llvm::SMRange range) {
  llvm::raw_string_ostream os(printed_);
  if (!inside(text_, range.Start)) {
    // No place in the text: the file as a whole, as the compiler prints a file-level error.
    os << name_ << ": " << message << "\n";
    return;
  }
  llvm::SmallVector<llvm::SMRange, 1> ranges;
  if (inside(text_, range.End) && range.End.getPointer() > range.Start.getPointer())
    ranges.push_back(range);
  // The kind label is part of `message` for errors ("error[ERR_CLUSTER_010]: ..."), which
  // SourceMgr's own label ("error: ") cannot say.
  sm_.GetMessage(range.Start, kind, message, ranges).print(nullptr, os, /*ShowColors=*/false,
                                                          /*ShowKindLabel=*/kind != llvm::SourceMgr::DK_Error);
}

void ConfigSource::error(const etcd::Status &status, llvm::SMRange range) {
  errors_.push_back(status);
  print(llvm::SourceMgr::DK_Error, status.str(), range);
}

void ConfigSource::note(const std::string &message, llvm::SMRange range) {
  print(llvm::SourceMgr::DK_Note, message, range);
}

TextSpan ConfigSource::spanOf(llvm::SMRange range) const {
  if (!inside(text_, range.Start))
    return {};
  auto [line, column] = sm_.getLineAndColumn(range.Start);
  unsigned length = inside(text_, range.End) && range.End.getPointer() > range.Start.getPointer()
                        ? unsigned(range.End.getPointer() - range.Start.getPointer())
                        : 0;
  return {line, column, length, size_t(range.Start.getPointer() - text_.data())};
}

llvm::SMRange ConfigSource::rangeOf(const TextSpan &at) const {
  if (!at.line || at.offset > text_.size())
    return {};
  llvm::SMLoc start = llvm::SMLoc::getFromPointer(text_.data() + at.offset);
  const char *end = std::min(start.getPointer() + at.length, text_.end());
  return {start, llvm::SMLoc::getFromPointer(end)};
}

} // namespace msc::cluster
