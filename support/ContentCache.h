// A cache on disk of what a tool derived from an input file's bytes (a parsed stdlib file's tokens,
// an hwloc XML converted to a topology), keyed by a hash of those bytes and of the running binary.
// It only saves time: the derivation (the grammar, the converter) stays the one source of truth.
//
// Where: $MSCALE_CACHE_DIR, else $XDG_CACHE_HOME/mscale, else $HOME/.cache/mscale. MSCALE_NO_CACHE=1
// turns it off. The key covers the content, the kind of entry and the GNU build ID of the running
// executable, so a rebuilt tool never reads what an older build wrote; without a build ID the
// cache is off. Every entry carries its key, its length and a checksum of its payload: an entry
// that does not match (truncated, corrupt, another key's) is ignored and rebuilt, never trusted.
// Writes go to a temporary file renamed into place, so concurrent tools see whole entries or none.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace msc {

class ContentCache {
public:
  // The cache as the environment configures it; disabled() when it is off or has no directory.
  static ContentCache fromEnvironment();
  // A cache in `directory` (tests); an empty directory gives a disabled cache.
  explicit ContentCache(std::string directory) : dir_(std::move(directory)) {}

  bool disabled() const { return dir_.empty(); }
  const std::string &directory() const { return dir_; }

  // The key of `content` for entries of `kind` ("tokens", "hwloc-xml"): hex of a 128-bit BLAKE3
  // over the kind, the build ID, `salt` (what else the result depends on: a shared library's
  // version) and the content.
  static std::string key(llvm::StringRef kind, llvm::StringRef content, llvm::StringRef salt = "");

  // The payload stored under (kind, key), or nullopt when absent, unreadable or not intact.
  std::optional<std::string> load(llvm::StringRef kind, llvm::StringRef key) const;
  // Best effort: a cache that cannot be written is a slower run, not an error.
  void store(llvm::StringRef kind, llvm::StringRef key, llvm::StringRef payload) const;

  // The path of an entry (tests corrupt it on purpose).
  std::string entryPath(llvm::StringRef kind, llvm::StringRef key) const;

private:
  std::string dir_;
};

// The GNU build ID of the running executable in hex; empty when it has none.
const std::string &executableBuildId();

} // namespace msc
