#include "worker/snapshot/Hash.h"

#include <cstring>

namespace msc::snapshot {
namespace {
constexpr uint64_t P1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t P3 = 0x165667B19E3779F9ULL;
constexpr uint64_t P4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t P5 = 0x27D4EB2F165667C5ULL;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t read64(const unsigned char *p) {
  uint64_t v;
  std::memcpy(&v, p, 8); // little-endian hosts only (x86-64, aarch64 LE)
  return v;
}
inline uint32_t read32(const unsigned char *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * P2;
  acc = rotl(acc, 31);
  return acc * P1;
}
inline uint64_t merge(uint64_t acc, uint64_t v) {
  acc ^= round(0, v);
  return acc * P1 + P4;
}
} // namespace

Hash64::Hash64(uint64_t seed) : seed_(seed) {
  v_[0] = seed + P1 + P2;
  v_[1] = seed + P2;
  v_[2] = seed;
  v_[3] = seed - P1;
}

void Hash64::update(const void *data, size_t size) {
  auto *p = static_cast<const unsigned char *>(data);
  total_ += size;
  if (bufLen_ + size < 32) {
    std::memcpy(buf_ + bufLen_, p, size);
    bufLen_ += size;
    return;
  }
  if (bufLen_) {
    size_t fill = 32 - bufLen_;
    std::memcpy(buf_ + bufLen_, p, fill);
    for (int i = 0; i < 4; ++i)
      v_[i] = round(v_[i], read64(buf_ + 8 * i));
    p += fill;
    size -= fill;
    bufLen_ = 0;
  }
  uint64_t v0 = v_[0], v1 = v_[1], v2 = v_[2], v3 = v_[3];
  while (size >= 32) {
    v0 = round(v0, read64(p));
    v1 = round(v1, read64(p + 8));
    v2 = round(v2, read64(p + 16));
    v3 = round(v3, read64(p + 24));
    p += 32;
    size -= 32;
  }
  v_[0] = v0, v_[1] = v1, v_[2] = v2, v_[3] = v3;
  std::memcpy(buf_, p, size);
  bufLen_ = size;
}

uint64_t Hash64::digest() const {
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
    for (int i = 0; i < 4; ++i)
      h = merge(h, v_[i]);
  } else {
    h = seed_ + P5;
  }
  h += total_;
  const unsigned char *p = buf_;
  size_t n = bufLen_;
  while (n >= 8) {
    h ^= round(0, read64(p));
    h = rotl(h, 27) * P1 + P4;
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    h ^= uint64_t(read32(p)) * P1;
    h = rotl(h, 23) * P2 + P3;
    p += 4;
    n -= 4;
  }
  while (n--) {
    h ^= (*p++) * P5;
    h = rotl(h, 11) * P1;
  }
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

uint64_t hash64(const void *data, size_t size, uint64_t seed) {
  Hash64 h(seed);
  h.update(data, size);
  return h.digest();
}

} // namespace msc::snapshot
