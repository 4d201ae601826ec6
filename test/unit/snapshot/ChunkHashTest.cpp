// The snapshot checksums (worker/snapshot/Hash.h, ChunkCopy.h): the published XXH64/XXH3 values, the
// format-2 blob digest recomputed from its definition, and the same digest (and the same copied
// bytes) whatever the number of threads and the alignment of the destination.
#include "worker/snapshot/ChunkCopy.h"
#include "worker/snapshot/Hash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace msc::snapshot;

namespace {

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 g(seed);
  for (auto &b : v)
    b = static_cast<uint8_t>(g());
  return v;
}

// The digest as Hash.h defines it, computed one chunk at a time without ChunkCopy.
uint64_t digestByDefinition(const std::vector<uint8_t> &data) {
  std::vector<uint64_t> chunks;
  for (size_t off = 0; off < data.size(); off += kDigestChunk)
    chunks.push_back(chunkHash(data.data() + off, std::min<size_t>(kDigestChunk, data.size() - off)));
  return combineChunkHashes(chunks);
}

TEST(SnapshotHash, PublishedValues) {
  EXPECT_EQ(hash64("", 0), 0xEF46DB3751D8E999ULL);   // XXH64 of the empty input
  EXPECT_EQ(chunkHash("", 0), 0x2D06800538D394C2ULL); // XXH3-64 of the empty input
  EXPECT_EQ(blobDigest(nullptr, 0, 1), chunkHash("", 0)); // no chunks: XXH3 of an empty list
}

TEST(SnapshotHash, Hash64StreamsLikeOneShot) {
  auto data = randomBytes(100003, 9);
  uint64_t whole = hash64(data.data(), data.size());
  std::mt19937 g(5);
  for (int round = 0; round < 20; ++round) {
    Hash64 h;
    size_t pos = 0;
    while (pos < data.size()) {
      size_t n = std::min<size_t>(g() % 100, data.size() - pos);
      h.update(data.data() + pos, n);
      pos += n;
    }
    EXPECT_EQ(h.digest(), whole);
  }
  EXPECT_NE(hash64(data.data(), data.size() - 1), whole);
}

TEST(SnapshotHash, BlobDigestFollowsItsDefinition) {
  for (size_t size : {size_t(1), size_t(kDigestChunk - 1), size_t(kDigestChunk), size_t(kDigestChunk + 1),
                      size_t(5 * kDigestChunk + 77)}) {
    auto data = randomBytes(size, static_cast<uint32_t>(size));
    EXPECT_EQ(blobDigest(data.data(), size, 1), digestByDefinition(data)) << size;
  }
}

TEST(SnapshotHash, ThreadsDoNotChangeTheDigest) {
  auto data = randomBytes(9 * kDigestChunk + 4097, 7);
  uint64_t one = blobDigest(data.data(), data.size(), 1);
  for (unsigned threads : {2u, 3u, 4u, 7u, 10u, 64u})
    EXPECT_EQ(blobDigest(data.data(), data.size(), threads), one) << threads << " threads";
  data[6 * kDigestChunk + 3] ^= 1; // one bit in one chunk changes the digest
  EXPECT_NE(blobDigest(data.data(), data.size(), 4), one);
}

TEST(SnapshotHash, CopiesEveryByteAtAnyAlignment) {
  auto src = randomBytes(3 * kDigestChunk + 1000, 11);
  std::vector<uint64_t> expect(chunkCount(src.size()));
  copyAndHashChunks(nullptr, src.data(), src.size(), 1, expect.data());
  for (size_t misalign : {0, 1, 15, 63}) {
    for (unsigned threads : {1u, 3u}) {
      std::vector<uint8_t> buf(src.size() + 64, 0xee);
      std::vector<uint64_t> got(chunkCount(src.size()));
      copyAndHashChunks(buf.data() + misalign, src.data(), src.size(), threads, got.data());
      EXPECT_EQ(std::memcmp(buf.data() + misalign, src.data(), src.size()), 0) << misalign << "/" << threads;
      EXPECT_EQ(got, expect);
      for (size_t i = 0; i < misalign; ++i) // nothing written before the destination
        ASSERT_EQ(buf[i], 0xee);
      for (size_t i = misalign + src.size(); i < buf.size(); ++i) // nor after it
        ASSERT_EQ(buf[i], 0xee);
    }
  }
}

TEST(SnapshotHash, ThreadsOnlyForLargeStates) {
  EXPECT_EQ(threadsFor(0), 1u);
  EXPECT_EQ(threadsFor((64u << 20) - 1), 1u);
  EXPECT_GE(threadsFor(64u << 20), 1u);
  EXPECT_LE(threadsFor(uint64_t(1) << 40), std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace
