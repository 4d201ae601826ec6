#include "bpf/ElfFile.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace msc::trace {

ElfFile::~ElfFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::unique_ptr<ElfFile> ElfFile::open(const std::string &path, std::string &error) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    error = "libelf initialisation failed";
    return nullptr;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<ElfFile> file(new ElfFile());
  file->path_ = path;
  file->fd_ = fd;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    error = "not an ELF file";
    if (elf)
      elf_end(elf);
    return nullptr;
  }
  size_t nphdr = 0;
  if (elf_getphdrnum(elf, &nphdr) != 0) {
    error = elf_errmsg(-1);
    elf_end(elf);
    return nullptr;
  }
  for (size_t i = 0; i < nphdr; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
      file->segments_.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
  }
  std::vector<ElfSymbol> syms;
  for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
      continue;
    Elf_Data *data = elf_getdata(scn, nullptr);
    if (!data)
      continue;
    size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym))
        continue;
      if ((GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC) ||
          sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
        continue;
      const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (!name || !*name)
        continue;
      syms.push_back({name, sym.st_value, sym.st_size, sh.sh_type == SHT_DYNSYM});
    }
  }
  elf_end(elf);
  if (file->segments_.empty()) {
    error = "no loadable segments";
    return nullptr;
  }
  // .dynsym entries first among equal addresses, so a dynamic name wins in lookups by name.
  std::stable_sort(syms.begin(), syms.end(), [](const ElfSymbol &a, const ElfSymbol &b) {
    if (a.vaddr != b.vaddr)
      return a.vaddr < b.vaddr;
    return a.dynamic && !b.dynamic;
  });
  file->byAddr_ = std::move(syms);
  return file;
}

std::optional<ElfSymbol> ElfFile::findFunction(llvm::StringRef name) const {
  const ElfSymbol *fallback = nullptr;
  for (const ElfSymbol &s : byAddr_) {
    if (s.name != name)
      continue;
    if (s.dynamic)
      return s;
    if (!fallback)
      fallback = &s;
  }
  if (fallback)
    return *fallback;
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::vaddrToFileOffset(uint64_t vaddr) const {
  for (const Segment &s : segments_)
    if (vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz)
      return vaddr - s.vaddr + s.offset;
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::fileOffsetToVaddr(uint64_t offset) const {
  for (const Segment &s : segments_)
    if (offset >= s.offset && offset < s.offset + s.filesz)
      return offset - s.offset + s.vaddr;
  return std::nullopt;
}

std::vector<uint8_t> ElfFile::readAt(uint64_t offset, size_t n) const {
  std::vector<uint8_t> out(n);
  ssize_t got = ::pread(fd_, out.data(), n, static_cast<off_t>(offset));
  out.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return out;
}

const ElfSymbol *ElfFile::functionAt(uint64_t vaddr) const {
  auto it = std::upper_bound(byAddr_.begin(), byAddr_.end(), vaddr,
                             [](uint64_t v, const ElfSymbol &s) { return v < s.vaddr; });
  if (it == byAddr_.begin())
    return nullptr;
  --it;
  // Several symbols may share the address (aliases): prefer the first one, which has the same address.
  uint64_t addr = it->vaddr;
  while (it != byAddr_.begin() && std::prev(it)->vaddr == addr)
    --it;
  for (auto j = it; j != byAddr_.end() && j->vaddr == addr; ++j)
    if (j->size == 0 || vaddr < j->vaddr + j->size)
      return &*j;
  return nullptr;
}

AttachPoint chooseAttachPoint(const ElfFile &elf, const ElfSymbol &sym, bool skipEndbr64) {
  AttachPoint ap;
  ap.symbolOffset = elf.vaddrToFileOffset(sym.vaddr).value_or(sym.vaddr);
  ap.offset = ap.symbolOffset;
  std::vector<uint8_t> bytes = elf.readAt(ap.symbolOffset, 4);
  if (bytes.size() == 4) {
    std::copy(bytes.begin(), bytes.end(), ap.firstBytes);
    static const uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    if (skipEndbr64 && std::equal(bytes.begin(), bytes.end(), kEndbr64) && (sym.size == 0 || sym.size > 4)) {
      ap.offset += 4;
      ap.skippedEndbr64 = true;
    }
  }
  return ap;
}

} // namespace msc::trace
