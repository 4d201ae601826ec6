// The two tiers behind Store. Private to the library.
#pragma once

#include "worker/snapshot/Format.h"
#include "worker/snapshot/Snapshot.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace msc::snapshot {

// One file per snapshot in a directory: snap-<step, 20 digits>.msnap. Written as
// .snap-<step>.msnap.tmp.<pid>, fsynced, renamed, then the directory is fsynced.
class DiskTier {
public:
  static Status open(const std::string &dir, uint32_t keep, std::unique_ptr<DiskTier> &out);
  Status save(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, uint64_t crashAfterBytes);
  // Writes an image already encoded (a committed memory slot: the same bytes) as the file of `step`.
  Status saveImage(uint64_t step, const uint8_t *image, uint64_t size);
  std::vector<SnapshotInfo> list() const; // by file name, newest first
  Status load(const SnapshotInfo &info, const BlobDestination &dest, Restored &out) const;
  static Status loadFile(const std::string &path, const BlobDestination &dest, Restored &out);
  static std::string fileName(uint64_t step);
  const std::string &dir() const { return dir_; }

private:
  // Creates the temporary file, lets `fill` write it, then fsync, rename, directory fsync, prune.
  Status writeFile(uint64_t step, const std::function<Status(format::Sink &, const std::string &)> &fill);
  void prune();
  void removeStaleTemporaries();
  std::string dir_;
  uint32_t keep_ = 3;
};

// A shared-memory region: a 4 KiB superblock, then `slots` slots of `slotSize` bytes, each a 4 KiB
// slot header and a snapshot image. A slot is invalidated before it is written and its header is
// committed last, so a writer killed half-way leaves the other slots (the previous snapshot) intact.
class MemoryTier {
public:
  // fd >= 0: use (and close at the end) that fd, named `name` in messages ("memfd:5"); else shm_open(name).
  static Status open(int fd, const std::string &name, uint32_t slots, std::unique_ptr<MemoryTier> &out);
  ~MemoryTier();
  // Writes into the oldest slot other than `avoidSlot` (-1: none; a slot a background disk write is
  // reading) and says which slot in `slot`.
  Status save(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, uint64_t crashAfterBytes,
              int64_t avoidSlot, uint32_t &slot);
  // Whether save() can keep `avoidSlot` intact: another slot exists and the image fits without the
  // region being laid out anew (which unmaps every slot).
  bool canAvoid(const SnapshotMeta &meta, const std::vector<BlobView> &blobs) const;
  // The committed image in `slot`, or null if it is not committed.
  const uint8_t *image(uint32_t slot, uint64_t &size) const;
  std::vector<SnapshotInfo> list() const;
  Status load(const SnapshotInfo &info, const BlobDestination &dest, Restored &out) const;
  void destroy();
  const std::string &describe() const { return what_; }
  // Threads that copy and hash a blob (0: by its size, threadsFor()).
  void setThreads(unsigned threads) { threads_ = threads; }

private:
  Status ensureCapacity(uint64_t imageSize);
  Status map(uint64_t size);
  void unmap();
  int fd_ = -1;
  bool ownsName_ = false; // shm_open'ed by us (can grow, can be unlinked)
  std::string name_;
  std::string what_; // "shm:/msc-snap-x" or "memfd:5"
  uint32_t slots_ = 2;
  uint8_t *base_ = nullptr;
  uint64_t mapped_ = 0;
  unsigned threads_ = 0;
};

} // namespace msc::snapshot
