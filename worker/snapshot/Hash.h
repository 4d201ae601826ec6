// The snapshot checksums, from Debian's libxxhash (no hash code of our own):
//   hash64      XXH64, seed 0 unless given: header, trailer, manifest, memory-tier superblock and slot
//               headers (small, never the bottleneck), and every blob of a format-1 image;
//   chunkHash   XXH3-64 of one chunk (AVX2/AVX-512 picked at run time on x86-64, ~2x XXH64 here);
//   blobDigest  the blob checksum of a format-2 image: XXH3-64 of each kDigestChunk bytes (the last
//               chunk may be shorter), then XXH3-64 of those chunk hashes as little-endian u64s.
// Chunks are hashed independently, so threads can hash disjoint ranges and the digest does not
// depend on how many did; kDigestChunk is part of the format (it fits in L2, so a chunk is hashed and
// copied while it is in cache: worker/snapshot/ChunkCopy.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace msc::snapshot {

constexpr uint64_t kDigestChunk = 256u << 10;

uint64_t hash64(const void *data, size_t size, uint64_t seed = 0);

// Streaming XXH64 (format-1 blobs are verified chunk by chunk as they are read).
class Hash64 {
public:
  explicit Hash64(uint64_t seed = 0);
  ~Hash64();
  Hash64(const Hash64 &) = delete;
  Hash64 &operator=(const Hash64 &) = delete;
  void update(const void *data, size_t size);
  uint64_t digest() const;

private:
  struct State; // XXH64_state_t, so that callers need no xxhash.h
  std::unique_ptr<State> state_;
};

uint64_t chunkHash(const void *data, size_t size);
uint64_t chunkCount(uint64_t size);
// The digest from the chunk hashes (one per kDigestChunk, in order).
uint64_t combineChunkHashes(const std::vector<uint64_t> &chunkHashes);
// blobDigest of `size` bytes at `data`, hashed by `threads` threads (0: threadsFor(size)).
uint64_t blobDigest(const void *data, uint64_t size, unsigned threads = 0);

} // namespace msc::snapshot
