#include "worker/snapshot/Snapshot.h"

#include "worker/snapshot/Format.h"
#include "worker/snapshot/Hash.h"
#include "worker/snapshot/Tiers.h"
#include "worker/WorkerApi.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <system_error>
#include <utility>

namespace msc::snapshot {

const RestoredBlob *Restored::find(const std::string &name) const {
  for (const auto &b : blobs)
    if (b.name == name)
      return &b;
  return nullptr;
}

Status Restored::copyBlob(const std::string &name, void *dst, uint64_t size) const {
  const RestoredBlob *b = find(name);
  if (!b)
    return Status::make(ErrorCode::ERR_SNAP_011, {std::to_string(meta.step), name});
  if (b->size != size)
    return Status::make(ErrorCode::ERR_SNAP_009, {"blob '" + name + "' has " + std::to_string(b->size) +
                                                      " bytes, the caller expects " + std::to_string(size)});
  if (dst != b->data)
    std::memcpy(dst, b->data, size);
  return {};
}

Store::~Store() { (void)flush(); }

Status Store::open(const StoreOptions &options, std::unique_ptr<Store> &out) {
  // A warm standby touches no snapshot before it has the job: the worker it stands by for still
  // writes them (WorkerApi.h: takeOver).
  mscale::worker::takeOver();
  if (options.diskDir.empty() && !options.memoryTier)
    return Status::make(ErrorCode::ERR_SNAP_009, {"no tier: give a disk directory or enable the memory tier"});
  std::unique_ptr<Store> s(new Store());
  s->options_ = options;
  if (!options.diskDir.empty())
    if (Status st = DiskTier::open(options.diskDir, options.keep, s->disk_); !st)
      return st;
  if (options.memoryTier) {
    int fd = options.memoryFd;
    std::string fdSource = "memoryFd";
    if (fd < 0 && options.useEnvFd) {
      if (const char *env = std::getenv("MSCALE_SNAPSHOT_MEMFD"); env && *env) {
        char *end = nullptr;
        long v = std::strtol(env, &end, 10);
        if (*end != '\0' || v < 0 || v > INT_MAX)
          return Status::make(ErrorCode::ERR_SNAP_007,
                              {std::string("MSCALE_SNAPSHOT_MEMFD=") + env, "not a file descriptor number"});
        fd = static_cast<int>(v);
        fdSource = std::string("MSCALE_SNAPSHOT_MEMFD=") + env;
      }
    }
    std::string name = options.memoryName;
    if (fd >= 0) {
      int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 3); // keep the caller's fd open when the store closes
      if (own < 0)
        return Status::make(ErrorCode::ERR_SNAP_007, {fdSource, std::strerror(errno)});
      name = "memfd:" + std::to_string(fd);
      fd = own;
    }
    if (fd < 0 && name.empty()) {
      if (options.diskDir.empty())
        return Status::make(ErrorCode::ERR_SNAP_009, {"the memory tier needs a name, an fd, or a disk directory"});
      // The directory's path and identity: a directory removed and made again under the same path
      // (a job started afresh) is another store, and must not resume from the old one's memory.
      char real[PATH_MAX];
      std::string key = ::realpath(options.diskDir.c_str(), real) ? real : options.diskDir;
      struct statx identity{};
      if (::statx(AT_FDCWD, key.c_str(), 0, STATX_INO | STATX_BTIME, &identity) == 0) {
        key += '\0' + std::to_string(identity.stx_dev_major) + ":" + std::to_string(identity.stx_dev_minor) + ":" +
               std::to_string(identity.stx_ino);
        if (identity.stx_mask & STATX_BTIME) // the inode number alone is reused at once on ext4
          key += ":" + std::to_string(identity.stx_btime.tv_sec) + "." + std::to_string(identity.stx_btime.tv_nsec);
      }
      char buf[40];
      std::snprintf(buf, sizeof buf, "/msc-snap-%016llx",
                    static_cast<unsigned long long>(hash64(key.data(), key.size())));
      name = buf;
    }
    if (Status st = MemoryTier::open(fd, name, options.memorySlots, s->memory_); !st) {
      if (fd >= 0)
        ::close(fd);
      return st;
    }
    s->memory_->setThreads(options.threads);
  }
  out = std::move(s);
  return {};
}

std::string Store::memoryTierName() const { return memory_ ? memory_->describe() : std::string(); }

Status Store::save(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, uint32_t tiers) {
  std::set<std::string> names;
  for (const auto &b : blobs) {
    if (b.name.empty())
      return Status::make(ErrorCode::ERR_SNAP_009, {"a blob has an empty name"});
    if (!names.insert(b.name).second)
      return Status::make(ErrorCode::ERR_SNAP_009, {"blob '" + b.name + "' is given twice"});
    if (b.size && !b.data)
      return Status::make(ErrorCode::ERR_SNAP_009, {"blob '" + b.name + "' has no data"});
  }
  if ((tiers & kBothTiers) == 0)
    return Status::make(ErrorCode::ERR_SNAP_009, {"no tier selected"});
  const bool toMemory = (tiers & static_cast<uint32_t>(Tier::Memory)) && memory_;
  const bool toDisk = (tiers & static_cast<uint32_t>(Tier::Disk)) && disk_;
  Status first;
  auto keepFirst = [&first](Status s) {
    if (first && !s)
      first = std::move(s);
  };
  bool inMemory = false;
  uint32_t slot = 0;
  if (toMemory) {
    if (diskWriter_.joinable() && !memory_->canAvoid(meta, blobs))
      keepFirst(flush()); // the slot the disk write reads would be overwritten or unmapped
    Status s = memory_->save(meta, blobs, options_.crashAfterBytes, diskWriterSlot_, slot);
    inMemory = s.ok();
    keepFirst(std::move(s));
  }
  if (toDisk) {
    keepFirst(flush()); // one disk write at a time
    if (options_.backgroundDisk && inMemory && !options_.crashAfterBytes)
      startDiskWrite(meta.step, slot);
    else
      keepFirst(disk_->save(meta, blobs, options_.crashAfterBytes));
  }
  return first;
}

void Store::startDiskWrite(uint64_t step, uint32_t slot) {
  diskWriterSlot_ = slot;
  diskWriterStatus_ = {};
  auto write = [this, step, slot] {
    uint64_t size = 0;
    const uint8_t *image = memory_->image(slot, size);
    diskWriterStatus_ =
        image ? disk_->saveImage(step, image, size)
              : Status::make(ErrorCode::ERR_SNAP_001, {DiskTier::fileName(step), "its memory slot was overwritten"});
  };
  try {
    diskWriter_ = std::thread(write);
  } catch (const std::system_error &) { // no thread to be had: write it now; flush() reports it
    write();
    diskWriterSlot_ = -1;
  }
}

void Store::waitForDiskWrite() {
  if (diskWriter_.joinable())
    diskWriter_.join();
  diskWriterSlot_ = -1;
}

Status Store::flush() {
  waitForDiskWrite();
  return std::exchange(diskWriterStatus_, Status{});
}

std::vector<SnapshotInfo> Store::list() const {
  std::vector<SnapshotInfo> all;
  if (memory_)
    all = memory_->list();
  if (disk_)
    for (auto &i : disk_->list())
      all.push_back(i);
  // Newest first; on a tie the memory tier first (faster, same content).
  std::stable_sort(all.begin(), all.end(), [](const SnapshotInfo &a, const SnapshotInfo &b) {
    if (a.step != b.step)
      return a.step > b.step;
    return a.tier == Tier::Memory && b.tier == Tier::Disk;
  });
  return all;
}

Status Store::restoreLatest(Restored &out, const BlobDestination &dest) {
  return restoreAtMost(UINT64_MAX, out, dest);
}

Status Store::restoreAtMost(uint64_t maxStep, Restored &out, const BlobDestination &dest) {
  std::vector<SnapshotInfo> all = list();
  std::erase_if(all, [maxStep](const SnapshotInfo &i) { return i.step > maxStep; });
  out = Restored{};
  if (all.empty()) {
    std::string where;
    if (memory_)
      where += "the memory tier (" + memory_->describe() + ")";
    if (disk_)
      where += std::string(where.empty() ? "" : " or ") + "'" + disk_->dir() + "'";
    return Status::make(ErrorCode::ERR_SNAP_003, {where});
  }
  std::vector<SkippedSnapshot> skipped;
  for (const auto &info : all) {
    Restored r;
    Status s = info.tier == Tier::Memory ? memory_->load(info, dest, r) : disk_->load(info, dest, r);
    if (s) {
      r.tier = info.tier;
      r.source = info.where;
      r.skipped = std::move(skipped);
      out = std::move(r);
      return {};
    }
    skipped.push_back({info.tier, info.step, info.where, s});
  }
  out.skipped = std::move(skipped);
  return Status::make(ErrorCode::ERR_SNAP_004, {std::to_string(all.size())});
}

void Store::destroyMemoryTier() {
  waitForDiskWrite(); // it reads the region; its outcome stays for the next save() or flush()
  if (memory_)
    memory_->destroy();
  memory_.reset();
}

Status verifyFile(const std::string &path, SnapshotMeta *meta) {
  Restored r;
  Status s = DiskTier::loadFile(path, {}, r);
  if (s && meta)
    *meta = r.meta;
  return s;
}

} // namespace msc::snapshot
