#include "worker/snapshot/ChunkCopy.h"

#include "worker/snapshot/Hash.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace msc::snapshot {
namespace {

constexpr uint64_t kMinParallelBytes = 64u << 20;
constexpr uint64_t kBytesPerThread = 32u << 20;

// memcpy with non-temporal stores for the 64-byte-aligned body: the destination is not read into
// cache first (saving a third of the traffic of a cached copy) and does not evict the source chunk.
void streamCopy(uint8_t *d, const uint8_t *s, size_t n) {
#if defined(__SSE2__)
  size_t head = std::min<size_t>(n, (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  size_t body = n & ~size_t(63);
  for (size_t i = 0; i < body; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 48), e);
  }
  std::memcpy(d + body, s + body, n - body);
#else
  std::memcpy(d, s, n);
#endif
}

void copyAndHashRange(uint8_t *dst, const uint8_t *src, uint64_t size, uint64_t firstChunk, uint64_t endChunk,
                      uint64_t *chunkHashes) {
  for (uint64_t c = firstChunk; c < endChunk; ++c) {
    uint64_t off = c * kDigestChunk;
    size_t n = static_cast<size_t>(std::min(kDigestChunk, size - off));
    chunkHashes[c] = chunkHash(src + off, n);
    if (dst)
      streamCopy(dst + off, src + off, n);
  }
#if defined(__SSE2__)
  if (dst)
    _mm_sfence(); // streaming stores are weakly ordered: make them visible before the caller commits
#endif
}

} // namespace

unsigned threadsFor(uint64_t bytes) {
  if (bytes < kMinParallelBytes)
    return 1;
  cpu_set_t set;
  unsigned cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<unsigned>(CPU_COUNT(&set))
                                                                 : std::thread::hardware_concurrency();
  return static_cast<unsigned>(std::clamp<uint64_t>(bytes / kBytesPerThread, 1, std::max(cpus, 1u)));
}

void copyAndHashChunks(void *dst, const void *src, uint64_t size, unsigned threads, uint64_t *chunkHashes) {
  auto *d = static_cast<uint8_t *>(dst);
  auto *s = static_cast<const uint8_t *>(src);
  uint64_t chunks = chunkCount(size);
  uint64_t parts = std::clamp<uint64_t>(threads, 1, std::max<uint64_t>(chunks, 1));
  std::vector<std::thread> helpers;
  uint64_t begin = 0;
  for (uint64_t t = 0; t + 1 < parts; ++t) {
    uint64_t end = chunks * (t + 1) / parts;
    try {
      helpers.emplace_back(copyAndHashRange, d, s, size, begin, end, chunkHashes);
    } catch (const std::system_error &) { // no thread to be had: do this range here
      copyAndHashRange(d, s, size, begin, end, chunkHashes);
    }
    begin = end;
  }
  copyAndHashRange(d, s, size, begin, chunks, chunkHashes);
  for (auto &t : helpers)
    t.join();
}

} // namespace msc::snapshot
