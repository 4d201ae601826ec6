// Worker-side snapshots for exact resume (issue 7): model/optimizer/RNG blobs plus the step, the
// data loader's position, the LR schedule and the loss-scale history, in two tiers:
//   memory: a shared-memory region on the node (an fd handed in through MSCALE_SNAPSHOT_MEMFD, e.g. the
//           executor's hugepage memfd, else POSIX shm_open), slots committed header-last;
//   disk:   one file per snapshot, written to a temporary file, fsynced, renamed, directory fsynced;
//           the newest `keep` are kept.
// Every blob, the manifest, the header and the trailer carry a checksum (XXH3/XXH64, Hash.h); restore
// verifies everything and falls back to the next newest snapshot (either tier) when one is torn or
// corrupt. Nothing valid is an error (ERR_SNAP_003/004), never a silent fresh start. The C ABI is in mscale_snapshot.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace msc::snapshot {

enum class ErrorCode : uint16_t {
  None = 0,
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) CODE,
#include "support/DiagnosticsSnapshot.def"
#undef DIAG
};

// The outcome of an operation: ok, or a coded error with its formatted message.
struct Status {
  ErrorCode code = ErrorCode::None;
  std::string message; // "no valid snapshot: 2 found, every one is torn or corrupt"

  bool ok() const { return code == ErrorCode::None; }
  explicit operator bool() const { return ok(); }
  // "error[ERR_SNAP_004]: no valid snapshot: ..."; "ok" when ok.
  std::string str() const;
  static Status make(ErrorCode code, std::vector<std::string> args);
};
const char *codeName(ErrorCode code); // "ERR_SNAP_004"
int codeNumber(ErrorCode code);       // 4 (0 for None): what the C ABI returns

enum class BlobKind : uint32_t { Model = 1, Optimizer = 2, Rng = 3, Other = 4 };

// Where the data loader stands: the next record is read from `file` at `byteOffset`, which is the
// `fileIndex`-th file of epoch `epoch`'s order (shuffled with `shuffleSeed`). `samplesSeen` counts
// samples consumed in the epoch.
struct LoaderState {
  std::string file;
  uint64_t byteOffset = 0;
  uint64_t shuffleSeed = 0;
  uint64_t epoch = 0;
  uint64_t fileIndex = 0;
  uint64_t samplesSeen = 0;
  bool operator==(const LoaderState &) const = default;
};

struct LrSchedulerState {
  std::string name; // "warmup-cosine"
  double baseLr = 0;
  double currentLr = 0;
  uint64_t lastStep = 0;
  std::vector<double> params; // scheduler-specific (warmup steps, total steps, ...)
  bool operator==(const LrSchedulerState &) const = default;
};

struct LossScaleEvent {
  uint64_t step = 0;
  double scale = 0;
  bool operator==(const LossScaleEvent &) const = default;
};
struct LossScaleState {
  double scale = 1;
  uint64_t growthTracker = 0;          // good steps since the last change
  std::vector<LossScaleEvent> history; // every change, oldest first
  bool operator==(const LossScaleState &) const = default;
};

// Everything but the blobs. `step` is the last completed step: a restore resumes at step + 1.
struct SnapshotMeta {
  uint64_t step = 0;
  LoaderState loader;
  LrSchedulerState lr;
  LossScaleState lossScale;
  bool operator==(const SnapshotMeta &) const = default;
};

// A blob to save: borrowed, not copied, until save() returns.
struct BlobView {
  std::string name;
  BlobKind kind = BlobKind::Other;
  const void *data = nullptr;
  uint64_t size = 0;
};

enum class Tier : uint32_t { Memory = 1, Disk = 2 };
constexpr uint32_t kBothTiers = 3;
const char *tierName(Tier tier); // "memory", "disk"

struct StoreOptions {
  std::string diskDir;     // empty: no disk tier
  bool memoryTier = true;  // false: disk only
  int memoryFd = -1;       // an fd to use for the memory tier (else MSCALE_SNAPSHOT_MEMFD, else shm_open)
  bool useEnvFd = true;    // honour MSCALE_SNAPSHOT_MEMFD
  std::string memoryName;  // shm_open name ("msc-snap-job1"); empty: derived from diskDir's path and identity
  uint32_t keep = 3;       // disk snapshots kept (>= 1)
  uint32_t memorySlots = 2; // memory slots (>= 1; 2 keeps the previous one valid while writing)
  // With both tiers: save() returns once the memory tier has committed, and the disk file is written
  // from that memory slot (the same bytes) by a background thread, so the step loop waits only for
  // the memory copy. One disk write at a time: the next save that needs the disk tier waits for the
  // previous one (the disk falls behind by one snapshot at most). Its error comes back from the next
  // save() or flush().
  bool backgroundDisk = false;
  unsigned threads = 0;     // memory tier: threads that copy and hash a blob (0: 1 below 64 MiB, else
                            // one per 32 MiB up to the CPUs this process may use)
  // Test hook: the writing process _exit(86)s after this many payload bytes of the next save
  // (0: never), leaving a half-written temporary file or memory slot behind.
  uint64_t crashAfterBytes = 0;
};

struct SkippedSnapshot {
  Tier tier;
  uint64_t step;
  std::string where; // file path, or "shm:NAME slot N"
  Status reason;     // ERR_SNAP_005 / 006 / 010
};

// An allocator whose resize() leaves the bytes uninitialised: a restore overwrites every byte of a
// blob, so zeroing the buffer first would be one more pass over memory.
template <class T> struct UninitializedAllocator : std::allocator<T> {
  template <class U> struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U> UninitializedAllocator(const UninitializedAllocator<U> &) noexcept {}
  template <class U> void construct(U *p) noexcept { ::new (static_cast<void *>(p)) U; }
};

struct RestoredBlob {
  std::string name;
  BlobKind kind;
  uint64_t size = 0;
  void *data = nullptr; // points into `owned` or into the caller's buffer
  std::vector<uint8_t, UninitializedAllocator<uint8_t>> owned;
};

struct Restored {
  SnapshotMeta meta;
  Tier tier = Tier::Disk;
  std::string source;                 // where it came from
  std::vector<SkippedSnapshot> skipped; // newer snapshots that failed verification
  std::vector<RestoredBlob> blobs;
  const RestoredBlob *find(const std::string &name) const;
  // Copies blob `name` into dst (exactly `size` bytes expected): ERR_SNAP_011 / 009 otherwise.
  Status copyBlob(const std::string &name, void *dst, uint64_t size) const;
};

// Where restore puts blob bytes: return a buffer of `size` bytes, or nullptr to let the library
// allocate (Restored::owned). Lets a worker restore straight into its parameter memory.
using BlobDestination = std::function<void *(const std::string &name, BlobKind kind, uint64_t size)>;

struct SnapshotInfo {
  Tier tier;
  uint64_t step;
  std::string where;
  uint32_t slot = 0; // memory tier: the slot index
};

class MemoryTier;
class DiskTier;

class Store {
public:
  static Status open(const StoreOptions &options, std::unique_ptr<Store> &out);
  ~Store();

  // Saves one snapshot to the tiers in `tiers` (kBothTiers by default; tiers the store lacks are
  // skipped). Each tier commits atomically; the first error is returned after trying every tier.
  Status save(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, uint32_t tiers = kBothTiers);
  // Waits for a background disk write (StoreOptions::backgroundDisk) and returns its outcome; ok if
  // none was in flight or its outcome was already returned.
  Status flush();
  // The newest valid snapshot across the tiers (memory wins a tie). Verified in full before it is
  // returned; torn/corrupt ones are listed in Restored::skipped.
  Status restoreLatest(Restored &out, const BlobDestination &dest = {});
  // The same among snapshots of step <= maxStep: the newest step every rank of a distributed job
  // committed, when this rank has newer ones that the others do not.
  Status restoreAtMost(uint64_t maxStep, Restored &out, const BlobDestination &dest = {});
  // Snapshots present (not verified), newest first.
  std::vector<SnapshotInfo> list() const;
  // Forgets the memory tier (shm_unlink for a named region): what node loss does.
  void destroyMemoryTier();

  bool hasMemoryTier() const { return memory_ != nullptr; }
  bool hasDiskTier() const { return disk_ != nullptr; }
  std::string memoryTierName() const;

private:
  Store() = default;
  void startDiskWrite(uint64_t step, uint32_t slot);
  void waitForDiskWrite();
  std::unique_ptr<MemoryTier> memory_;
  std::unique_ptr<DiskTier> disk_;
  StoreOptions options_;
  std::thread diskWriter_;  // the background disk write, if one was started and not yet joined
  Status diskWriterStatus_; // its outcome, read after the join, until flush() returns it
  int64_t diskWriterSlot_ = -1; // the memory slot it reads
};

// Verifies one snapshot file completely (header, trailer, manifest, every blob).
Status verifyFile(const std::string &path, SnapshotMeta *meta = nullptr);

} // namespace msc::snapshot
