// The on-disk content cache: key, entry layout and the build ID that salts every key.
#include "support/ContentCache.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/Endian.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/xxhash.h>

#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <link.h>

namespace msc {
namespace {

// Entry: magic, the key it was stored under, payload length (u64 LE), XXH64 of the payload (u64
// LE), payload. The key inside guards against a file renamed or copied under another name.
constexpr llvm::StringLiteral kMagic = "MSCACHE1";
constexpr size_t kKeyChars = 32;
constexpr size_t kHeaderBytes = kMagic.size() + kKeyChars + 8 + 8;

int findBuildId(dl_phdr_info *info, size_t, void *out) {
  // The first object dl_iterate_phdr reports is the executable itself.
  auto &id = *static_cast<std::string *>(out);
  for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(p);
      const char *name = p + sizeof(ElfW(Nhdr));
      const char *desc = name + ((note->n_namesz + 3) & ~3u);
      const char *next = desc + ((note->n_descsz + 3) & ~3u);
      if (next > end)
        break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        id = llvm::toHex(llvm::StringRef(desc, note->n_descsz), /*LowerCase=*/true);
        return 1;
      }
      p = next;
    }
  }
  return 1; // only the executable
}

const char *nonEmptyEnv(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

} // namespace

const std::string &executableBuildId() {
  static const std::string id = [] {
    std::string found;
    dl_iterate_phdr(findBuildId, &found);
    return found;
  }();
  return id;
}

ContentCache ContentCache::fromEnvironment() {
  const char *off = nonEmptyEnv("MSCALE_NO_CACHE");
  if ((off && llvm::StringRef(off) != "0") || executableBuildId().empty())
    return ContentCache("");
  if (const char *dir = nonEmptyEnv("MSCALE_CACHE_DIR"))
    return ContentCache(dir);
  llvm::SmallString<256> path;
  if (const char *xdg = nonEmptyEnv("XDG_CACHE_HOME"))
    path = xdg;
  else if (const char *home = nonEmptyEnv("HOME"))
    llvm::sys::path::append(path, home, ".cache");
  else
    return ContentCache("");
  llvm::sys::path::append(path, "mscale");
  return ContentCache(std::string(path));
}

std::string ContentCache::key(llvm::StringRef kind, llvm::StringRef content, llvm::StringRef salt) {
  llvm::BLAKE3 hasher;
  auto feed = [&](llvm::StringRef part) {
    uint8_t size[8];
    llvm::support::endian::write64le(size, part.size());
    hasher.update(llvm::ArrayRef<uint8_t>(size, 8));
    hasher.update(part);
  };
  feed(kind);
  feed(executableBuildId());
  feed(salt);
  feed(content);
  auto digest = hasher.final<kKeyChars / 2>();
  return llvm::toHex(llvm::ArrayRef<uint8_t>(digest.data(), digest.size()), /*LowerCase=*/true);
}

std::string ContentCache::entryPath(llvm::StringRef kind, llvm::StringRef key) const {
  llvm::SmallString<256> path(dir_);
  llvm::sys::path::append(path, kind, key);
  return std::string(path);
}

std::optional<std::string> ContentCache::load(llvm::StringRef kind, llvm::StringRef key) const {
  if (disabled() || key.size() != kKeyChars)
    return std::nullopt;
  auto buf = llvm::MemoryBuffer::getFile(entryPath(kind, key), /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return std::nullopt;
  llvm::StringRef data = (*buf)->getBuffer();
  if (data.size() < kHeaderBytes || !data.starts_with(kMagic) || data.substr(kMagic.size(), kKeyChars) != key)
    return std::nullopt;
  const char *p = data.data() + kMagic.size() + kKeyChars;
  uint64_t length = llvm::support::endian::read64le(p);
  uint64_t checksum = llvm::support::endian::read64le(p + 8);
  llvm::StringRef payload = data.drop_front(kHeaderBytes);
  if (payload.size() != length || llvm::xxHash64(payload) != checksum)
    return std::nullopt;
  return payload.str();
}

void ContentCache::store(llvm::StringRef kind, llvm::StringRef key, llvm::StringRef payload) const {
  if (disabled() || key.size() != kKeyChars)
    return;
  llvm::SmallString<256> dir(dir_);
  llvm::sys::path::append(dir, kind);
  if (llvm::sys::fs::create_directories(dir))
    return;
  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, key + "-%%%%%%.tmp");
  int fd = -1;
  llvm::SmallString<256> temp;
  if (llvm::sys::fs::createUniqueFile(model, fd, temp))
    return;
  bool ok;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    char header[16];
    llvm::support::endian::write64le(header, payload.size());
    llvm::support::endian::write64le(header + 8, llvm::xxHash64(payload));
    out << kMagic << key << llvm::StringRef(header, sizeof header) << payload;
    out.close();
    ok = !out.has_error();
    out.clear_error();
  }
  if (!ok || llvm::sys::fs::rename(temp, entryPath(kind, key)))
    llvm::sys::fs::remove(temp);
}

} // namespace msc
