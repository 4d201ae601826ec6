// XXH64, written from the published algorithm (no dependency): the checksum of every blob, the
// manifest, the header and the trailer of a snapshot. ~10+ GB/s on one core, streaming or one-shot.
#pragma once

#include <cstddef>
#include <cstdint>

namespace msc::snapshot {

class Hash64 {
public:
  explicit Hash64(uint64_t seed = 0);
  void update(const void *data, size_t size);
  uint64_t digest() const;

private:
  uint64_t v_[4];
  uint64_t total_ = 0;
  uint64_t seed_;
  unsigned char buf_[32];
  size_t bufLen_ = 0;
};

uint64_t hash64(const void *data, size_t size, uint64_t seed = 0);

} // namespace msc::snapshot
