// Copying a blob and computing its chunk hashes in one pass over memory, on several threads when
// the blob is large. Each kDigestChunk of the source is hashed first (which brings it into cache),
// then copied out of cache with streaming stores, which do not read the destination's lines first:
// the memory traffic is that of one memcpy. Used by both directions of the memory tier (save: the
// worker's blob into a slot; restore: a slot into the worker's buffer) and, without a destination,
// to hash alone.
#pragma once

#include <cstdint>

namespace msc::snapshot {

// How many threads to use for `bytes`: 1 below 64 MiB, else one per 32 MiB up to the CPUs this process
// may run on (its affinity mask, which the executor sets). The 64 MiB threshold is a choice, not a
// measurement: on the 2-core machine of docs/PERFORMANCE.md a second thread bought nothing at any size.
unsigned threadsFor(uint64_t bytes);

// Hashes each kDigestChunk of src[0, size) into chunkHashes[i] (chunkCount(size) entries) and, if
// dst is not null, copies src to dst. `threads` >= 1 split the chunks into contiguous ranges; the
// result does not depend on it. src and dst must not overlap.
void copyAndHashChunks(void *dst, const void *src, uint64_t size, unsigned threads, uint64_t *chunkHashes);

} // namespace msc::snapshot
