#include "bpf/Symbolizer.h"

#include <llvm/Demangle/Demangle.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace msc::trace {

void Symbolizer::snapshot(int pid) {
  if (!maps_.count(pid))
    maps_[pid] = readMaps(pid);
}

const MapEntry *Symbolizer::findMapping(int pid, uint64_t addr) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto &maps = maps_[pid];
    for (const MapEntry &m : maps)
      if (addr >= m.start && addr < m.end)
        return &m;
    if (attempt == 0) {
      // A library loaded after the snapshot: read again while the process is still there.
      std::vector<MapEntry> fresh = readMaps(pid);
      if (fresh.empty())
        return nullptr;
      maps = std::move(fresh);
    }
  }
  return nullptr;
}

const ElfFile *Symbolizer::elf(const std::string &path, int pid) {
  auto it = elfs_.find(path);
  if (it != elfs_.end())
    return it->second.get();
  std::string error;
  std::unique_ptr<ElfFile> file = ElfFile::open(path, error);
  if (!file) // another mount namespace
    file = ElfFile::open("/proc/" + std::to_string(pid) + "/root" + path, error);
  return (elfs_[path] = std::move(file)).get();
}

std::string Symbolizer::frame(int pid, uint64_t addr, bool returnAddress) {
  uint64_t lookup = returnAddress && addr ? addr - 1 : addr;
  const MapEntry *m = findMapping(pid, lookup);
  if (!m)
    return "[unknown]";
  if (m->path == "[uprobes]")
    return "[uretprobe]";
  if (m->path.empty() || m->path[0] != '/')
    return m->path.empty() ? "[anon]" : m->path;
  uint64_t fileOffset = lookup - m->start + m->offset;
  llvm::StringRef base = llvm::StringRef(m->path).rsplit('/').second;
  if (const ElfFile *file = elf(m->path, pid)) {
    if (auto vaddr = file->fileOffsetToVaddr(fileOffset))
      if (const ElfSymbol *sym = file->functionAt(*vaddr))
        return llvm::demangle(sym->name);
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  os << base << "+0x" << llvm::format_hex_no_prefix(fileOffset, 1);
  return os.str();
}

} // namespace msc::trace
