#include "worker/snapshot/Hash.h"

#include "worker/snapshot/ChunkCopy.h"

#define XXH_STATIC_LINKING_ONLY // XXH64_state_t's definition, to hold one by value
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h> // XXH3_64bits becomes XXH3_64bits_dispatch: the widest vector unit present
#endif

#include <bit>

namespace msc::snapshot {

uint64_t hash64(const void *data, size_t size, uint64_t seed) { return XXH64(data, size, seed); }

struct Hash64::State {
  XXH64_state_t s;
};

Hash64::Hash64(uint64_t seed) : state_(std::make_unique<State>()) { XXH64_reset(&state_->s, seed); }

Hash64::~Hash64() = default;

void Hash64::update(const void *data, size_t size) { XXH64_update(&state_->s, data, size); }

uint64_t Hash64::digest() const { return XXH64_digest(&state_->s); }

uint64_t chunkHash(const void *data, size_t size) { return XXH3_64bits(data, size); }

uint64_t chunkCount(uint64_t size) { return (size + kDigestChunk - 1) / kDigestChunk; }

uint64_t combineChunkHashes(const std::vector<uint64_t> &chunkHashes) {
  static_assert(std::endian::native == std::endian::little, "the format stores little-endian chunk hashes");
  return XXH3_64bits(chunkHashes.data(), chunkHashes.size() * sizeof(uint64_t));
}

uint64_t blobDigest(const void *data, uint64_t size, unsigned threads) {
  std::vector<uint64_t> hashes(chunkCount(size));
  copyAndHashChunks(nullptr, data, size, threads ? threads : threadsFor(size), hashes.data());
  return combineChunkHashes(hashes);
}

} // namespace msc::snapshot
