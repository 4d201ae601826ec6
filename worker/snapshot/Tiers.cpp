#include "worker/snapshot/Tiers.h"

#include "worker/snapshot/Format.h"
#include "worker/snapshot/Hash.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace msc::snapshot {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

// ---- disk ----

class FdSink : public format::Sink {
public:
  FdSink(int fd, std::string what) : fd_(fd), what_(std::move(what)) {}
  Status write(uint64_t offset, const void *data, size_t size) override {
    auto *p = static_cast<const uint8_t *>(data);
    while (size) {
      ssize_t n = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return Status::make(ErrorCode::ERR_SNAP_001, {what_, errnoText(n < 0 ? errno : EIO)});
      p += n, size -= static_cast<size_t>(n), offset += static_cast<uint64_t>(n);
    }
    return {};
  }

private:
  int fd_;
  std::string what_;
};

class FdSource : public format::Source {
public:
  FdSource(int fd, uint64_t size, std::string what) : fd_(fd), size_(size), what_(std::move(what)) {}
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, void *data, size_t size) override {
    auto *p = static_cast<uint8_t *>(data);
    while (size) {
      ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return Status::make(ErrorCode::ERR_SNAP_005, {what_, std::string("read failed: ") + errnoText(errno)});
      if (n == 0)
        return Status::make(ErrorCode::ERR_SNAP_005, {what_, "unexpected end of file"});
      p += n, size -= static_cast<size_t>(n), offset += static_cast<uint64_t>(n);
    }
    return {};
  }

private:
  int fd_;
  uint64_t size_;
  std::string what_;
};

bool parseSnapName(const char *name, uint64_t &step) {
  unsigned long long s;
  int len = 0;
  if (std::sscanf(name, "snap-%20llu.msnap%n", &s, &len) == 1 && name[len] == '\0' && std::strlen(name) == 31) {
    step = s;
    return true;
  }
  return false;
}

Status mkdirs(const std::string &dir) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty())
      continue;
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::make(ErrorCode::ERR_SNAP_002, {dir, errnoText(errno)});
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return Status::make(ErrorCode::ERR_SNAP_002, {dir, errnoText(errno)});
  if (!S_ISDIR(st.st_mode))
    return Status::make(ErrorCode::ERR_SNAP_002, {dir, "not a directory"});
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return Status::make(ErrorCode::ERR_SNAP_002, {dir, errnoText(errno)});
  return {};
}

// ---- memory ----

constexpr char kSuperMagic[8] = {'M', 'S', 'C', 'S', 'H', 'M', 'T', '1'};
constexpr char kSlotMagic[8] = {'M', 'S', 'C', 'S', 'L', 'O', 'T', '1'};
constexpr uint64_t kSuperSize = 4096;
constexpr uint64_t kSlotHeaderSize = 4096;
constexpr uint64_t kHugeAlign = 2u << 20; // sizes we choose are 2 MiB multiples, so a hugetlb memfd works
constexpr uint32_t kCommitted = 2;

struct Super {
  char magic[8];
  uint32_t version;
  uint32_t slots;
  uint64_t slotSize;
  uint64_t hash; // of the 24 bytes above
};
struct SlotHeader {
  char magic[8];
  uint32_t state; // 0 empty, 1 being written, 2 committed
  uint32_t pad;
  uint64_t step;
  uint64_t imageSize;
  uint64_t seq;
  uint64_t hash; // of the 40 bytes above
};
static_assert(sizeof(Super) == 32 && sizeof(SlotHeader) == 48);

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class MemSink : public format::Sink {
public:
  MemSink(uint8_t *base, uint64_t cap, std::string what) : base_(base), cap_(cap), what_(std::move(what)) {}
  Status write(uint64_t offset, const void *data, size_t size) override {
    if (offset > cap_ || size > cap_ - offset)
      return Status::make(ErrorCode::ERR_SNAP_001, {what_, "write past the end of the slot"});
    std::memcpy(base_ + offset, data, size);
    return {};
  }
  uint8_t *direct(uint64_t offset, uint64_t size) override {
    return offset <= cap_ && size <= cap_ - offset ? base_ + offset : nullptr; // else write() reports it
  }

private:
  uint8_t *base_;
  uint64_t cap_;
  std::string what_;
};

class MemSource : public format::Source {
public:
  MemSource(const uint8_t *base, uint64_t size) : base_(base), size_(size) {}
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, void *data, size_t size) override {
    std::memcpy(data, base_ + offset, size); // decode bounds-checks offsets against size() first
    return {};
  }
  const uint8_t *direct(uint64_t offset, uint64_t) override { return base_ + offset; }

private:
  const uint8_t *base_;
  uint64_t size_;
};

} // namespace

// ============================== DiskTier ==============================

std::string DiskTier::fileName(uint64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "snap-%020" PRIu64 ".msnap", step);
  return buf;
}

Status DiskTier::open(const std::string &dir, uint32_t keep, std::unique_ptr<DiskTier> &out) {
  if (Status s = mkdirs(dir); !s)
    return s;
  out.reset(new DiskTier());
  out->dir_ = dir;
  out->keep_ = std::max<uint32_t>(keep, 1);
  out->removeStaleTemporaries();
  return {};
}

void DiskTier::removeStaleTemporaries() {
  DIR *d = ::opendir(dir_.c_str());
  if (!d)
    return;
  while (dirent *e = ::readdir(d)) {
    const char *tmp = std::strstr(e->d_name, ".msnap.tmp.");
    if (e->d_name[0] != '.' || !tmp)
      continue;
    long pid = std::atol(tmp + 11);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      ::unlink((dir_ + "/" + e->d_name).c_str()); // left by a writer that died mid-write
  }
  ::closedir(d);
}

Status DiskTier::save(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, uint64_t crashAfterBytes) {
  return writeFile(meta.step, [&](format::Sink &sink, const std::string &tmp) {
    return format::encode(meta, blobs, sink, crashAfterBytes, tmp);
  });
}

Status DiskTier::saveImage(uint64_t step, const uint8_t *image, uint64_t size) {
  return writeFile(step, [&](format::Sink &sink, const std::string &) -> Status {
    constexpr uint64_t kPiece = 4u << 20;
    for (uint64_t off = 0; off < size; off += kPiece)
      if (Status s = sink.write(off, image + off, static_cast<size_t>(std::min(kPiece, size - off))); !s)
        return s;
    return {};
  });
}

Status DiskTier::writeFile(uint64_t step,
                           const std::function<Status(format::Sink &, const std::string &)> &fill) {
  std::string final = dir_ + "/" + fileName(step);
  std::string tmp = dir_ + "/." + fileName(step) + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::make(ErrorCode::ERR_SNAP_001, {tmp, errnoText(errno)});
  FdSink sink(fd, tmp);
  Status s = fill(sink, tmp);
  if (s && ::fsync(fd) != 0)
    s = Status::make(ErrorCode::ERR_SNAP_001, {tmp, std::string("fsync: ") + errnoText(errno)});
  if (::close(fd) != 0 && s)
    s = Status::make(ErrorCode::ERR_SNAP_001, {tmp, std::string("close: ") + errnoText(errno)});
  if (s && ::rename(tmp.c_str(), final.c_str()) != 0)
    s = Status::make(ErrorCode::ERR_SNAP_001, {final, std::string("rename: ") + errnoText(errno)});
  if (!s) {
    ::unlink(tmp.c_str());
    return s;
  }
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) {
    s = Status::make(ErrorCode::ERR_SNAP_001, {dir_, std::string("fsync of the directory: ") + errnoText(errno)});
  }
  if (dfd >= 0)
    ::close(dfd);
  if (s)
    prune();
  return s;
}

std::vector<SnapshotInfo> DiskTier::list() const {
  std::vector<SnapshotInfo> out;
  DIR *d = ::opendir(dir_.c_str());
  if (!d)
    return out;
  while (dirent *e = ::readdir(d)) {
    uint64_t step;
    if (parseSnapName(e->d_name, step))
      out.push_back({Tier::Disk, step, dir_ + "/" + e->d_name});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const SnapshotInfo &a, const SnapshotInfo &b) { return a.step > b.step; });
  return out;
}

void DiskTier::prune() {
  auto all = list();
  for (size_t i = keep_; i < all.size(); ++i)
    ::unlink(all[i].where.c_str());
}

Status DiskTier::load(const SnapshotInfo &info, const BlobDestination &dest, Restored &out) const {
  return loadFile(info.where, dest, out);
}

Status DiskTier::loadFile(const std::string &path, const BlobDestination &dest, Restored &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::make(ErrorCode::ERR_SNAP_005, {path, errnoText(errno)});
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::make(ErrorCode::ERR_SNAP_005, {path, errnoText(errno)});
  }
  FdSource src(fd, static_cast<uint64_t>(st.st_size), path);
  Status s = format::decode(src, path, dest, out);
  ::close(fd);
  return s;
}

// ============================== MemoryTier ==============================

Status MemoryTier::open(int fd, const std::string &name, uint32_t slots, std::unique_ptr<MemoryTier> &out) {
  std::unique_ptr<MemoryTier> t(new MemoryTier());
  t->slots_ = std::max<uint32_t>(slots, 1);
  if (fd >= 0) {
    t->fd_ = fd;
    t->what_ = name;
  } else {
    t->name_ = name.empty() || name[0] != '/' ? "/" + name : name;
    t->what_ = "shm:" + t->name_;
    t->fd_ = ::shm_open(t->name_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (t->fd_ < 0)
      return Status::make(ErrorCode::ERR_SNAP_007, {t->what_, errnoText(errno)});
    t->ownsName_ = true;
  }
  struct stat st;
  if (::fstat(t->fd_, &st) != 0)
    return Status::make(ErrorCode::ERR_SNAP_007, {t->what_, errnoText(errno)});
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size >= kSuperSize + kSlotHeaderSize) {
    if (Status s = t->map(size); !s)
      return s;
    Super sb;
    std::memcpy(&sb, t->base_, sizeof sb);
    bool valid = std::memcmp(sb.magic, kSuperMagic, 8) == 0 && hash64(&sb, 24) == sb.hash && sb.slots >= 1 &&
                 sb.slotSize >= kSlotHeaderSize && kSuperSize + sb.slots * sb.slotSize <= size;
    if (!valid) { // a fresh region handed in (or garbage): lay it out in the size we were given
      uint64_t slotSize = (size - kSuperSize) / t->slots_ / 4096 * 4096;
      if (slotSize < kSlotHeaderSize)
        return Status::make(ErrorCode::ERR_SNAP_007, {t->what_, "region of " + std::to_string(size) + " bytes is too small"});
      std::memset(t->base_, 0, kSuperSize);
      for (uint32_t i = 0; i < t->slots_; ++i)
        std::memset(t->base_ + kSuperSize + i * slotSize, 0, sizeof(SlotHeader));
      Super nsb{};
      std::memcpy(nsb.magic, kSuperMagic, 8);
      nsb.version = 1, nsb.slots = t->slots_, nsb.slotSize = slotSize;
      nsb.hash = hash64(&nsb, 24);
      std::memcpy(t->base_, &nsb, sizeof nsb);
    } else {
      t->slots_ = sb.slots;
    }
  }
  out = std::move(t);
  return {};
}

MemoryTier::~MemoryTier() {
  unmap();
  if (fd_ >= 0)
    ::close(fd_);
}

Status MemoryTier::map(uint64_t size) {
  unmap();
  void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED)
    return Status::make(ErrorCode::ERR_SNAP_007, {what_, std::string("mmap: ") + errnoText(errno)});
  base_ = static_cast<uint8_t *>(p);
  mapped_ = size;
  return {};
}

void MemoryTier::unmap() {
  if (base_)
    ::munmap(base_, mapped_);
  base_ = nullptr;
  mapped_ = 0;
}

Status MemoryTier::ensureCapacity(uint64_t imageSize) {
  uint64_t need = kSlotHeaderSize + imageSize;
  if (base_) {
    Super sb;
    std::memcpy(&sb, base_, sizeof sb);
    if (sb.slotSize >= need)
      return {};
  }
  uint64_t slotSize = alignUp(need, kHugeAlign);
  uint64_t total = alignUp(kSuperSize + slots_ * slotSize, kHugeAlign);
  if (::ftruncate(fd_, static_cast<off_t>(total)) != 0) {
    uint64_t have = 0;
    if (base_) {
      Super sb;
      std::memcpy(&sb, base_, sizeof sb);
      have = sb.slotSize - kSlotHeaderSize;
    }
    return Status::make(ErrorCode::ERR_SNAP_008, {std::to_string(imageSize), std::to_string(have)});
  }
  if (Status s = map(total); !s)
    return s;
  // A new layout: the old slots are gone (the disk tier still has them).
  std::memset(base_, 0, kSuperSize);
  for (uint32_t i = 0; i < slots_; ++i)
    std::memset(base_ + kSuperSize + i * slotSize, 0, sizeof(SlotHeader));
  Super sb{};
  std::memcpy(sb.magic, kSuperMagic, 8);
  sb.version = 1, sb.slots = slots_, sb.slotSize = slotSize;
  sb.hash = hash64(&sb, 24);
  std::memcpy(base_, &sb, sizeof sb);
  return {};
}

bool MemoryTier::canAvoid(const SnapshotMeta &meta, const std::vector<BlobView> &blobs) const {
  if (!base_)
    return false;
  Super sb;
  std::memcpy(&sb, base_, sizeof sb);
  return sb.slots >= 2 && sb.slotSize >= kSlotHeaderSize + format::layout(meta, blobs).totalSize;
}

const uint8_t *MemoryTier::image(uint32_t slot, uint64_t &size) const {
  if (!base_)
    return nullptr;
  Super sb;
  std::memcpy(&sb, base_, sizeof sb);
  if (slot >= sb.slots)
    return nullptr;
  const uint8_t *p = base_ + kSuperSize + slot * sb.slotSize;
  SlotHeader h;
  std::memcpy(&h, p, sizeof h);
  if (std::memcmp(h.magic, kSlotMagic, 8) != 0 || h.state != kCommitted || hash64(&h, 40) != h.hash ||
      h.imageSize > sb.slotSize - kSlotHeaderSize)
    return nullptr;
  size = h.imageSize;
  return p + kSlotHeaderSize;
}

Status MemoryTier::save(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, uint64_t crashAfterBytes,
                        int64_t avoidSlot, uint32_t &usedSlot) {
  if (fd_ < 0)
    return Status::make(ErrorCode::ERR_SNAP_007, {what_, "the tier was destroyed"});
  format::Layout l = format::layout(meta, blobs);
  if (Status s = ensureCapacity(l.totalSize); !s)
    return s;
  Super sb;
  std::memcpy(&sb, base_, sizeof sb);
  // Overwrite an empty slot, else the oldest committed one: never the newest, never `avoidSlot`.
  uint32_t victim = 0;
  uint64_t victimSeq = UINT64_MAX, maxSeq = 0;
  for (uint32_t i = 0; i < sb.slots; ++i) {
    SlotHeader h;
    std::memcpy(&h, base_ + kSuperSize + i * sb.slotSize, sizeof h);
    bool committed = std::memcmp(h.magic, kSlotMagic, 8) == 0 && h.state == kCommitted && hash64(&h, 40) == h.hash;
    uint64_t seq = committed ? h.seq : 0;
    maxSeq = std::max(maxSeq, seq);
    if (seq < victimSeq && (static_cast<int64_t>(i) != avoidSlot || sb.slots == 1))
      victim = i, victimSeq = seq;
  }
  usedSlot = victim;
  uint8_t *slot = base_ + kSuperSize + victim * sb.slotSize;
  std::string what = what_ + " slot " + std::to_string(victim);
  SlotHeader h{};
  std::memcpy(h.magic, kSlotMagic, 8);
  h.state = 1; // being written: not valid until committed below
  std::memcpy(slot, &h, sizeof h);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  MemSink sink(slot + kSlotHeaderSize, sb.slotSize - kSlotHeaderSize, what);
  if (Status s = format::encode(meta, blobs, sink, crashAfterBytes, what, threads_); !s)
    return s;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  h.state = kCommitted;
  h.step = meta.step;
  h.imageSize = l.totalSize;
  h.seq = maxSeq + 1;
  h.hash = hash64(&h, 40);
  std::memcpy(slot, &h, sizeof h);
  return {};
}

std::vector<SnapshotInfo> MemoryTier::list() const {
  std::vector<SnapshotInfo> out;
  if (!base_)
    return out;
  Super sb;
  std::memcpy(&sb, base_, sizeof sb);
  std::vector<std::pair<uint64_t, SnapshotInfo>> bySeq;
  for (uint32_t i = 0; i < sb.slots; ++i) {
    SlotHeader h;
    std::memcpy(&h, base_ + kSuperSize + i * sb.slotSize, sizeof h);
    if (std::memcmp(h.magic, kSlotMagic, 8) == 0 && h.state == kCommitted && hash64(&h, 40) == h.hash &&
        h.imageSize <= sb.slotSize - kSlotHeaderSize)
      bySeq.push_back({h.seq, SnapshotInfo{Tier::Memory, h.step, what_ + " slot " + std::to_string(i), i}});
  }
  std::sort(bySeq.begin(), bySeq.end(), [](const auto &a, const auto &b) {
    return a.second.step != b.second.step ? a.second.step > b.second.step : a.first > b.first;
  });
  for (auto &p : bySeq)
    out.push_back(p.second);
  return out;
}

Status MemoryTier::load(const SnapshotInfo &info, const BlobDestination &dest, Restored &out) const {
  if (!base_)
    return Status::make(ErrorCode::ERR_SNAP_005, {info.where, "the region is not mapped"});
  Super sb;
  std::memcpy(&sb, base_, sizeof sb);
  const uint8_t *slot = base_ + kSuperSize + info.slot * sb.slotSize;
  SlotHeader h;
  std::memcpy(&h, slot, sizeof h);
  if (h.state != kCommitted || hash64(&h, 40) != h.hash || h.imageSize > sb.slotSize - kSlotHeaderSize)
    return Status::make(ErrorCode::ERR_SNAP_005, {info.where, "the slot is not committed"});
  MemSource src(slot + kSlotHeaderSize, h.imageSize);
  return format::decode(src, info.where, dest, out, threads_);
}

void MemoryTier::destroy() {
  if (base_)
    std::memset(base_, 0, kSuperSize);
  unmap();
  if (ownsName_)
    ::shm_unlink(name_.c_str());
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

} // namespace msc::snapshot
