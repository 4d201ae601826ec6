// Batched random-access reads on one io_uring ring: many (file, offset, length) reads into the
// caller's buffers with up to `depth` reads in flight (IoUringReader's readAt keeps one in flight;
// its streaming mode reads whole files into its own blocks). What the C ABI (mscale_worker.h) serves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace msc::worker {

class UringQueue;

struct ReadRequest {
  const char *path = nullptr; // opened when its first read is queued, closed when it is done
  int fd = -1;                // used when `path` is null; never closed by the reader
  uint64_t offset = 0;
  uint64_t length = 0;
  void *buffer = nullptr;     // at least `length` bytes
  int64_t result = 0;         // out: bytes read (fewer only at the end of the file) or -errno
  bool openFailed = false;    // out: the failure was opening `path`, not reading it
};

class BatchReader {
public:
  // nullptr with `error` (and `err`, an errno value) set when io_uring refuses the depth. A request
  // is read in pieces of at most `chunkBytes`, so one large file also keeps the queue full.
  static std::unique_ptr<BatchReader> create(unsigned depth, size_t chunkBytes, std::string &error, int &err);
  ~BatchReader();
  BatchReader(const BatchReader &) = delete;
  BatchReader &operator=(const BatchReader &) = delete;

  // Reads every request; each one's `result` says how it went. Returns 0, or the errno of the first
  // failed request with `error` naming it and `failedIndex` its index.
  int read(ReadRequest *requests, size_t count, std::string &error, size_t &failedIndex);

  unsigned depth() const { return depth_; }
  size_t chunkBytes() const { return chunkBytes_; }
  unsigned maxInFlight() const; // the deepest queue reached
  uint64_t bytesRead() const { return bytes_; }

private:
  BatchReader() = default;
  std::unique_ptr<UringQueue> queue_;
  unsigned depth_ = 0;
  size_t chunkBytes_ = 0;
  uint64_t bytes_ = 0;
};

// The io_uring depth the executor checked for `role` (MSCALE_ROLE_<ROLE>_IO_DEPTH): 0 and the depth,
// ENOENT when the variable is not set, EINVAL when it is not a positive 32-bit number.
int roleIoDepth(const char *role, unsigned &depth);

} // namespace msc::worker
