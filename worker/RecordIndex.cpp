#include "worker/RecordIndex.h"

#include "worker/snapshot/Hash.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace msc::worker {
namespace {
constexpr char kMagic[8] = {'M', 'S', 'C', 'R', 'I', 'D', 'X', '1'};
// magic, file size, mtime ns, record count; then (offset, length) per record; then the XXH64.
constexpr size_t kHeader = 8 + 8 + 8 + 8;

int64_t mtimeNs(const struct stat &st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

void put64(std::string &b, uint64_t v) { b.append(reinterpret_cast<const char *>(&v), 8); }
uint64_t get64(const char *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

bool readWhole(const std::string &path, std::string &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[1 << 16];
  bool ok = true;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ok;
}
} // namespace

std::string RecordIndex::cachePath(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + ".ridx";
}

size_t RecordIndex::firstEndingAfter(uint64_t offset) const {
  // Records are in order and do not overlap, so their ends are sorted too.
  return static_cast<size_t>(
      std::upper_bound(records_.begin(), records_.end(), offset,
                       [](uint64_t o, const RecordSpan &r) { return o < r.end(); }) -
      records_.begin());
}

bool RecordIndex::startsRecord(uint64_t offset) const {
  size_t i = firstEndingAfter(offset);
  return i < records_.size() && records_[i].offset == offset;
}

bool RecordIndex::readCache(const std::string &cache) {
  std::string b;
  if (!readWhole(cache, b) || b.size() < kHeader + 8 || std::memcmp(b.data(), kMagic, 8) != 0)
    return false;
  uint64_t count = get64(b.data() + 24);
  if (count > (b.size() - kHeader - 8) / 16 || b.size() != kHeader + count * 16 + 8)
    return false;
  snapshot::Hash64 h;
  h.update(b.data(), b.size() - 8);
  if (h.digest() != get64(b.data() + b.size() - 8))
    return false;
  if (get64(b.data() + 8) != fileSize_ || static_cast<int64_t>(get64(b.data() + 16)) != mtimeNs_)
    return false; // the file changed since it was scanned
  std::vector<RecordSpan> recs(count);
  uint64_t prevEnd = 0;
  for (uint64_t i = 0; i < count; ++i) {
    recs[i].offset = get64(b.data() + kHeader + i * 16);
    recs[i].length = get64(b.data() + kHeader + i * 16 + 8);
    // A checksum that holds over nonsense (a bug elsewhere) is still not trusted.
    if (recs[i].offset < prevEnd || recs[i].length > fileSize_ || recs[i].offset > fileSize_ - recs[i].length)
      return false;
    prevEnd = recs[i].end();
  }
  records_ = std::move(recs);
  return true;
}

void RecordIndex::writeCache(const std::string &cache) const {
  std::string b(kMagic, 8);
  put64(b, fileSize_);
  put64(b, static_cast<uint64_t>(mtimeNs_));
  put64(b, records_.size());
  for (const RecordSpan &r : records_) {
    put64(b, r.offset);
    put64(b, r.length);
  }
  snapshot::Hash64 h;
  h.update(b.data(), b.size());
  put64(b, h.digest());
  std::string tmp = cache + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return; // a read-only dataset directory: the index lives in memory only
  bool ok = ::write(fd, b.data(), b.size()) == static_cast<ssize_t>(b.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), cache.c_str()) != 0)
    ::unlink(tmp.c_str());
}

bool RecordIndex::load(const std::string &path, const Scanner &scan, RecordIndex &out, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = "cannot stat '" + path + "': " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  RecordIndex idx;
  idx.fileSize_ = static_cast<uint64_t>(st.st_size);
  idx.mtimeNs_ = mtimeNs(st);
  std::string cache = cachePath(path);
  if (idx.readCache(cache)) {
    idx.source_ = Source::Cache;
    ::close(fd);
    out = std::move(idx);
    return true;
  }
  bool ok = scan(fd, idx.fileSize_, idx.records_, error);
  ::close(fd);
  if (!ok) {
    error = "'" + path + "': " + error;
    return false;
  }
  uint64_t prevEnd = 0;
  for (const RecordSpan &r : idx.records_) {
    if (r.offset < prevEnd || r.end() > idx.fileSize_) {
      error = "'" + path + "': the scanner's records overlap or run past the end of the file";
      return false;
    }
    prevEnd = r.end();
  }
  idx.source_ = Source::Scanned;
  idx.writeCache(cache);
  out = std::move(idx);
  return true;
}

} // namespace msc::worker
