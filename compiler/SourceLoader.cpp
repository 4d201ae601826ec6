// Reads the main file and its imports into the SourceMgr and parses each once.
#include "compiler/Frontend.h"

#include <llvm/ADT/StringSet.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>

namespace msc {

namespace {

uint64_t fnv1a(llvm::StringRef bytes, uint64_t hash) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

class SourceLoader {
public:
  SourceLoader(const FrontendOptions &options, llvm::SourceMgr &sm, DiagnosticEngine &diags, SourceSet &out)
      : options_(options), sm_(sm), diags_(diags), out_(out) {}

  // Returns false when the file could not be read at all.
  bool load(llvm::StringRef path, Location requestedAt) {
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(path, real))
      real = path;
    // The stack is checked first: a file on it is also in loaded_, and a cycle must be reported.
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (stack_[i] != real)
        continue;
      std::string chain;
      for (size_t j = i; j < stack_.size(); ++j)
        chain += llvm::sys::path::filename(stack_[j]).str() + " -> ";
      chain += llvm::sys::path::filename(real).str();
      diags_.report(DiagCode::ERR_SEM_011, requestedAt) << chain;
      return true;
    }
    if (loaded_.contains(real))
      return true;

    std::unique_ptr<llvm::MemoryBuffer> buffer;
    if (!read(path, requestedAt, buffer))
      return false;
    out_.hash = fnv1a(buffer->getBuffer(), out_.hash);
    unsigned id = sm_.AddNewSourceBuffer(std::move(buffer), requestedAt.range.Start);
    loaded_.insert(real);
    std::unique_ptr<ast::File> file = parseContract(id, sm_, diags_, options_.limits, options_.cache);
    if (!file)
      return true;
    file->path = path.str();
    ast::File *raw = file.get();
    out_.files.push_back(std::move(file));

    stack_.push_back(real.str().str());
    for (const ast::Import &import : raw->imports) {
      Location at{import.range, {}, 0};
      std::optional<std::string> found = resolveImport(import.path, path);
      if (!found) {
        DiagBuilder d = diags_.report(DiagCode::ERR_SEM_010, at);
        d << import.path;
        d.note(Location::none(), "searched: " + searchedDirs(path));
        continue;
      }
      load(*found, at);
    }
    stack_.pop_back();
    return true;
  }

private:
  bool read(llvm::StringRef path, const Location &requestedAt, std::unique_ptr<llvm::MemoryBuffer> &out) {
    Location where = requestedAt.hasRange() ? requestedAt : Location{{}, path.str(), 0};
    if (const std::string *text = memoryFile(path)) {
      if (text->size() > options_.limits.maxBytes) {
        diags_.report(DiagCode::ERR_SYN_007, Location{{}, path.str(), 0})
            << static_cast<uint64_t>(text->size()) << static_cast<uint64_t>(options_.limits.maxBytes);
        return false;
      }
      out = llvm::MemoryBuffer::getMemBufferCopy(*text, path);
      return true;
    }
    if (path != "-") {
      llvm::sys::fs::file_status status;
      if (std::error_code ec = llvm::sys::fs::status(path, status)) {
        diags_.report(DiagCode::ERR_DRV_001, where) << path << ec.message();
        return false;
      }
      if (llvm::sys::fs::is_directory(status)) {
        diags_.report(DiagCode::ERR_DRV_001, where) << path << "is a directory";
        return false;
      }
      // Refuse huge files before reading them.
      if (llvm::sys::fs::is_regular_file(status) && status.getSize() > options_.limits.maxBytes) {
        diags_.report(DiagCode::ERR_SYN_007, Location{{}, path.str(), 0})
            << static_cast<uint64_t>(status.getSize()) << static_cast<uint64_t>(options_.limits.maxBytes);
        return false;
      }
    }
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false, /*RequiresNullTerminator=*/true);
    if (!buffer) {
      diags_.report(DiagCode::ERR_DRV_001, where) << path << buffer.getError().message();
      return false;
    }
    out = std::move(*buffer);
    return true;
  }

  const std::string *memoryFile(llvm::StringRef path) const {
    if (!options_.memoryFiles)
      return nullptr;
    auto it = options_.memoryFiles->find(path.str());
    return it == options_.memoryFiles->end() ? nullptr : &it->second;
  }

  std::vector<std::string> searchPath(llvm::StringRef importer) const {
    std::vector<std::string> dirs;
    // A file held in memory has no directory of its own to look beside.
    llvm::StringRef parent = llvm::sys::path::parent_path(importer);
    if (!memoryFile(importer))
      dirs.push_back(parent.empty() ? "." : parent.str());
    dirs.insert(dirs.end(), options_.includeDirs.begin(), options_.includeDirs.end());
    if (!options_.stdlibDir.empty())
      dirs.push_back(options_.stdlibDir);
    return dirs;
  }

  std::optional<std::string> resolveImport(llvm::StringRef name, llvm::StringRef importer) const {
    if (llvm::sys::path::is_absolute(name))
      return memoryFile(name) || llvm::sys::fs::is_regular_file(name) ? std::optional<std::string>(name.str())
                                                                       : std::nullopt;
    for (const std::string &dir : searchPath(importer)) {
      llvm::SmallString<256> candidate(dir);
      llvm::sys::path::append(candidate, name);
      if (memoryFile(candidate) || llvm::sys::fs::is_regular_file(candidate))
        return candidate.str().str();
    }
    return std::nullopt;
  }

  std::string searchedDirs(llvm::StringRef importer) const {
    std::string out;
    for (const std::string &dir : searchPath(importer))
      out += (out.empty() ? "" : ", ") + ("'" + dir + "'");
    return out;
  }

  const FrontendOptions &options_;
  llvm::SourceMgr &sm_;
  DiagnosticEngine &diags_;
  SourceSet &out_;
  llvm::StringSet<> loaded_;
  std::vector<std::string> stack_;
};

} // namespace

std::unique_ptr<SourceSet> loadSources(llvm::StringRef path, const FrontendOptions &options, llvm::SourceMgr &sm,
                                       DiagnosticEngine &diags) {
  auto sources = std::make_unique<SourceSet>();
  sources->hash = 0xcbf29ce484222325ull;
  SourceLoader loader(options, sm, diags, *sources);
  if (!loader.load(path, Location::none()))
    return nullptr;
  return sources;
}

std::optional<ir::Module> compileContractFile(llvm::StringRef path, const FrontendOptions &options,
                                              llvm::SourceMgr &sm, DiagnosticEngine &diags) {
  std::unique_ptr<SourceSet> sources = loadSources(path, options, sm, diags);
  if (!sources || diags.hasErrors())
    return std::nullopt;
  return buildModule(*sources, diags, options.profileOverride, options.profileOverrideContract, options.defaultClass);
}

} // namespace msc
