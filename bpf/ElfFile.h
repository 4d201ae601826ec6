// Reading what mscale-trace needs from an ELF shared object or executable: function symbols from
// .dynsym (present in stripped libraries) and .symtab, file offsets of symbols (uprobes attach by
// file offset), the first bytes of a function, and address -> function name for stack frames.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc::trace {

struct ElfSymbol {
  std::string name;
  uint64_t vaddr = 0;
  uint64_t size = 0;
  bool dynamic = false; // found in .dynsym
};

class ElfFile {
public:
  // nullptr and `error` set when the file cannot be read or is not ELF.
  static std::unique_ptr<ElfFile> open(const std::string &path, std::string &error);
  ~ElfFile();
  ElfFile(const ElfFile &) = delete;
  ElfFile &operator=(const ElfFile &) = delete;

  const std::string &path() const { return path_; }
  // A defined function symbol by name; .dynsym first, so stripped libraries work.
  std::optional<ElfSymbol> findFunction(llvm::StringRef name) const;
  // ELF virtual address <-> file offset through the PT_LOAD segments.
  std::optional<uint64_t> vaddrToFileOffset(uint64_t vaddr) const;
  std::optional<uint64_t> fileOffsetToVaddr(uint64_t offset) const;
  std::vector<uint8_t> readAt(uint64_t offset, size_t n) const;
  // The function containing `vaddr` (symbols with a size; else the nearest one before it).
  const ElfSymbol *functionAt(uint64_t vaddr) const;
  size_t functionCount() const { return byAddr_.size(); }

private:
  ElfFile() = default;
  struct Segment {
    uint64_t vaddr, offset, filesz;
  };
  std::string path_;
  int fd_ = -1;
  std::vector<Segment> segments_;
  std::vector<ElfSymbol> byAddr_; // functions, sorted by address, deduplicated
};

// Where to put a uprobe for a function whose code starts at `fileOffset`. A probe on `endbr64`
// (f3 0f 1e fa) must be single-stepped (~10 us per hit); the next instruction (normally
// `push %rbp`) is emulated (~0.7 us), so we attach 4 bytes in. The return address is still at
// [rsp] there, so the uretprobe works unchanged.
struct AttachPoint {
  uint64_t symbolOffset = 0; // file offset of the symbol
  uint64_t offset = 0;       // file offset we attach at
  bool skippedEndbr64 = false;
  uint8_t firstBytes[4] = {};
};
AttachPoint chooseAttachPoint(const ElfFile &elf, const ElfSymbol &sym, bool skipEndbr64 = true);

} // namespace msc::trace
