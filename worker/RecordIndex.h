// Where the records of a data file lie (byte offset and length of each, in file order), built once per
// file by one pass of a format-specific scanner and cached beside the file, so a read-ahead reader knows
// the upcoming record boundaries (and skips what lies between records) without parsing records itself.
//
// The cache is `<dir>/.<name>.ridx`: magic, the file's size and mtime (ns) when it was scanned, the
// records, and an XXH64 of all that. It is used only when the file still has that size and mtime and
// the checksum holds; otherwise (changed file, corrupt or truncated cache) the file is scanned again
// and the cache rewritten (temporary file + rename). A directory that cannot be written keeps the
// index in memory only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace msc::worker {

struct RecordSpan {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
};

class RecordIndex {
public:
  // Reads the records of the open file `fd` of `size` bytes into `out` in file order (non-overlapping);
  // false with `error` when the file is not of the scanner's format.
  using Scanner = std::function<bool(int fd, uint64_t size, std::vector<RecordSpan> &out, std::string &error)>;

  // How load() got the index.
  enum class Source { Cache, Scanned };

  // The index of `path`: from its cache when that is valid, else scanned (and the cache rewritten).
  // False with `error` when the file cannot be opened or the scanner refuses it.
  static bool load(const std::string &path, const Scanner &scan, RecordIndex &out, std::string &error);
  static std::string cachePath(const std::string &path);

  const std::vector<RecordSpan> &records() const { return records_; }
  Source source() const { return source_; }
  uint64_t fileSize() const { return fileSize_; }
  // The first record that ends after `offset` (records().size() when none): the next one a
  // sequential reader at `offset` needs.
  size_t firstEndingAfter(uint64_t offset) const;
  // Whether a record starts exactly at `offset`.
  bool startsRecord(uint64_t offset) const;

private:
  std::vector<RecordSpan> records_;
  uint64_t fileSize_ = 0;
  int64_t mtimeNs_ = 0;
  Source source_ = Source::Scanned;
  bool readCache(const std::string &cache);
  void writeCache(const std::string &cache) const;
};

} // namespace msc::worker
