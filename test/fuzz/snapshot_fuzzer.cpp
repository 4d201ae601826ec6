// libFuzzer target: arbitrary bytes as a snapshot image (the bytes of a disk file or a memory slot)
// through the snapshot decoder, formats 1 and 2. A refusal is always torn, corrupt or of an unknown
// version; an image that decodes agrees with peek() on its step and holds its blobs in bounds.
#include "worker/snapshot/Format.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace msc::snapshot;

namespace {

class BytesSource : public format::Source {
public:
  BytesSource(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, void *out, size_t n) override {
    if (offset > size_ || n > size_ - offset)
      abort(); // the decoder checks every offset against size() before it reads
    std::memcpy(out, data_ + offset, n);
    return {};
  }
  const uint8_t *direct(uint64_t offset, uint64_t n) override {
    if (offset > size_ || n > size_ - offset)
      abort();
    return data_ + offset;
  }

private:
  const uint8_t *data_;
  size_t size_;
};

bool isRefusal(ErrorCode c) {
  return c == ErrorCode::ERR_SNAP_005 || c == ErrorCode::ERR_SNAP_006 || c == ErrorCode::ERR_SNAP_010;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  BytesSource src(data, size);
  uint64_t step = 0;
  Status peeked = format::peek(src, "fuzz.msnap", step);
  if (!peeked && !isRefusal(peeked.code))
    abort();
  Restored out;
  Status decoded = format::decode(src, "fuzz.msnap", {}, out);
  if (!decoded) {
    if (!isRefusal(decoded.code) || decoded.message.empty())
      abort();
    return 0;
  }
  if (!peeked || out.meta.step != step)
    abort(); // decode verifies more than peek, never less
  for (const auto &b : out.blobs)
    if (b.size > size || (b.size && !b.data))
      abort();
  return 0;
}
