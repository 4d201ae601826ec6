// The one io_uring submission and completion path of the worker's readers (IoUringReader's streaming
// and random-access modes, BatchReader under the C ABI): a ring of `depth` entries, reads queued
// without a system call, one io_uring_enter that submits them all and waits, and completions reaped in
// one pass. Optionally a set of page-aligned buffers registered with the kernel once (READ_FIXED then
// skips pinning the pages on every read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct io_uring;

namespace msc::worker {

class UringQueue {
public:
  struct Completion {
    uint64_t tag = 0;
    int result = 0; // bytes read or -errno
  };

  // nullptr with `error` (and `err`, an errno value) when io_uring refuses the depth.
  static std::unique_ptr<UringQueue> create(unsigned depth, std::string &error, int &err);
  ~UringQueue();
  UringQueue(const UringQueue &) = delete;
  UringQueue &operator=(const UringQueue &) = delete;

  // `count` buffers of `bytes` each (rounded up to a page), owned by the queue and registered with the
  // kernel when it allows (root or a large enough RLIMIT_MEMLOCK); kept across calls. False only when
  // the memory cannot be had.
  bool provideBuffers(unsigned count, size_t bytes);
  unsigned bufferCount() const { return static_cast<unsigned>(buffers_.size()); }
  size_t bufferBytes() const { return bufferBytes_; }
  char *buffer(unsigned index) const { return buffers_[index]; }
  bool buffersRegistered() const { return registered_; }

  // False once a failed submission left no ring behind (setting it up again was refused).
  bool usable() const { return ring_ != nullptr; }
  bool full() const { return inFlight_ >= depth_; }
  unsigned inFlight() const { return inFlight_; }
  // Queues a read of `length` bytes of `fd` at `offset` into `dest`; `bufferIndex` >= 0 says `dest` lies
  // in that provided buffer. `async` asks the kernel to go to its worker threads at once instead of
  // trying the read inline first (IOSQE_ASYNC). The caller checks full() first.
  void queueRead(int fd, void *dest, uint32_t length, uint64_t offset, uint64_t tag, int bufferIndex, bool async);
  // Submits everything queued in one system call and waits for at least one completion, then reaps
  // every completion there is into `out` (cleared first). 0, or -errno when the submission failed: the
  // reads the kernel had taken are waited for (they write into their buffers), the rest are dropped, the
  // ring is set up afresh and nothing is in flight; every read not reaped before is lost.
  int submitAndWait(std::vector<Completion> &out);
  // Submits everything queued without waiting (read-ahead: the kernel reads while the caller works).
  // On a failure the reads stay queued and the next submitAndWait submits them or reports it.
  void submit();

  unsigned depth() const { return depth_; }
  unsigned maxInFlight() const { return maxInFlight_; } // the deepest queue reached

private:
  UringQueue() = default;
  int setUp();
  std::unique_ptr<io_uring> ring_;
  unsigned depth_ = 0;
  unsigned inFlight_ = 0;
  unsigned maxInFlight_ = 0;
  std::vector<char *> buffers_;
  size_t bufferBytes_ = 0;
  bool registered_ = false;
};

} // namespace msc::worker
