// The snapshot image: the same bytes in a disk file and in a memory slot.
//
//   [0, 4096)        header: "MSCSNAP1", version, step, total size, manifest offset/size/hash, header hash
//   [4096, ...)      blobs, each at a 4096-aligned offset
//   manifest         step, loader, LR scheduler, loss scale, then (name, kind, offset, size, hash) per blob
//   last 32 bytes    trailer: "MSCSEND1", step, manifest hash, trailer hash
//
// All integers little-endian. The header, trailer and manifest hashes are XXH64 (seed 0). A blob's
// hash is its blobDigest (chunked XXH3, worker/snapshot/Hash.h) in version 2, XXH64 of the whole
// blob in version 1. Version 2 is written; both are read, so that snapshots taken before an upgrade
// (a disk tier, or a memory tier that outlived the worker) still restore; any other version is
// refused with ERR_SNAP_010. Private to the library.
#pragma once

#include "worker/snapshot/Snapshot.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace msc::snapshot::format {

constexpr uint32_t kVersion = 2;       // written
constexpr uint32_t kOldestVersion = 1; // still read
constexpr uint64_t kHeaderSize = 4096;
constexpr uint64_t kTrailerSize = 32;
constexpr uint64_t kAlign = 4096;

class Sink {
public:
  virtual ~Sink() = default;
  virtual Status write(uint64_t offset, const void *data, size_t size) = 0;
  // Memory the image can be copied into directly (one pass, several threads), or null: use write().
  virtual uint8_t *direct(uint64_t /*offset*/, uint64_t /*size*/) { return nullptr; }
};

class Source {
public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Called from one thread at a time, not always the one that made the Source.
  virtual Status read(uint64_t offset, void *data, size_t size) = 0;
  // The image's bytes in memory (bounds already checked by the caller), or null: use read().
  virtual const uint8_t *direct(uint64_t /*offset*/, uint64_t /*size*/) { return nullptr; }
};

struct Layout {
  std::vector<uint64_t> blobOffsets;
  uint64_t manifestOffset = 0;
  uint64_t manifestSize = 0;
  uint64_t totalSize = 0;
};
Layout layout(const SnapshotMeta &meta, const std::vector<BlobView> &blobs);

// Writes the whole image (blobs, manifest, trailer, then the header). `crashAfterBytes` > 0 makes
// the process _exit(86) once that many blob bytes are written (test hook). `what` names the
// destination in error messages. `threads`: hashing/copying threads per blob (0: threadsFor(size)).
Status encode(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, Sink &sink, uint64_t crashAfterBytes,
              const std::string &what, unsigned threads = 0);

// Reads the header and trailer only: the step, or ERR_SNAP_005/006/010.
Status peek(Source &src, const std::string &what, uint64_t &step);
// Verifies everything and fills `out` (meta + blobs). On error `out` is left partly filled.
Status decode(Source &src, const std::string &what, const BlobDestination &dest, Restored &out,
              unsigned threads = 0);

} // namespace msc::snapshot::format
