#include "worker/UringQueue.h"

#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/uio.h>

namespace msc::worker {

std::unique_ptr<UringQueue> UringQueue::create(unsigned depth, std::string &error, int &err) {
  if (depth == 0) {
    error = "queue depth must be positive";
    err = EINVAL;
    return nullptr;
  }
  std::unique_ptr<UringQueue> q(new UringQueue());
  q->depth_ = depth;
  if (int rc = q->setUp(); rc < 0) {
    error = "io_uring_queue_init(" + std::to_string(depth) + "): " + std::strerror(-rc);
    err = -rc;
    return nullptr;
  }
  return q;
}

int UringQueue::setUp() {
  ring_ = std::make_unique<io_uring>();
  // Completions are only looked at when we wait for them: the kernel need not interrupt the task to run
  // their work early (cooperative task running, 5.19 and later; without it, the default).
  int rc = io_uring_queue_init(depth_, ring_.get(), IORING_SETUP_COOP_TASKRUN);
  if (rc == -EINVAL)
    rc = io_uring_queue_init(depth_, ring_.get(), 0);
  if (rc < 0) {
    ring_.reset();
    return rc;
  }
  registered_ = false;
  if (!buffers_.empty()) {
    std::vector<iovec> iov;
    for (char *b : buffers_)
      iov.push_back({b, bufferBytes_});
    registered_ = io_uring_register_buffers(ring_.get(), iov.data(), static_cast<unsigned>(iov.size())) == 0;
  }
  return 0;
}

UringQueue::~UringQueue() {
  if (ring_)
    io_uring_queue_exit(ring_.get());
  for (char *b : buffers_)
    std::free(b);
}

bool UringQueue::provideBuffers(unsigned count, size_t bytes) {
  bytes = (bytes + 4095) / 4096 * 4096;
  if (count == buffers_.size() && bytes == bufferBytes_)
    return true;
  if (registered_)
    io_uring_unregister_buffers(ring_.get());
  registered_ = false;
  for (char *b : buffers_)
    std::free(b);
  buffers_.clear();
  bufferBytes_ = bytes;
  for (unsigned i = 0; i < count; ++i) {
    char *b = static_cast<char *>(std::aligned_alloc(4096, bytes));
    if (!b)
      return false;
    buffers_.push_back(b);
  }
  std::vector<iovec> iov;
  for (char *b : buffers_)
    iov.push_back({b, bytes});
  // Refused without enough locked memory allowed: plain reads into the same buffers work as well.
  registered_ = io_uring_register_buffers(ring_.get(), iov.data(), count) == 0;
  return true;
}

void UringQueue::queueRead(int fd, void *dest, uint32_t length, uint64_t offset, uint64_t tag, int bufferIndex,
                           bool async) {
  io_uring_sqe *sqe = io_uring_get_sqe(ring_.get());
  if (bufferIndex >= 0 && registered_)
    io_uring_prep_read_fixed(sqe, fd, dest, length, offset, bufferIndex);
  else
    io_uring_prep_read(sqe, fd, dest, length, offset);
  if (async)
    sqe->flags |= IOSQE_ASYNC;
  io_uring_sqe_set_data64(sqe, tag);
  ++inFlight_;
  maxInFlight_ = std::max(maxInFlight_, inFlight_);
}

int UringQueue::submitAndWait(std::vector<Completion> &out) {
  out.clear();
  if (!ring_)
    return -EBADF;
  int rc = io_uring_submit_and_wait(ring_.get(), 1);
  if (rc < 0 && rc != -EINTR) {
    // Reads the kernel took still land in their buffers: wait for those before anyone reuses the
    // memory; the ones never sent are dropped with the ring.
    unsigned sent = inFlight_ - std::min<unsigned>(inFlight_, io_uring_sq_ready(ring_.get()));
    while (sent > 0) {
      io_uring_cqe *cqe = nullptr;
      int w = io_uring_wait_cqe(ring_.get(), &cqe);
      if (w == -EINTR)
        continue;
      if (w < 0)
        break;
      io_uring_cqe_seen(ring_.get(), cqe);
      --sent;
    }
    io_uring_queue_exit(ring_.get());
    inFlight_ = 0;
    setUp();
    return rc;
  }
  io_uring_cqe *cqe;
  unsigned head, seen = 0;
  io_uring_for_each_cqe(ring_.get(), head, cqe) {
    ++seen;
    out.push_back({io_uring_cqe_get_data64(cqe), cqe->res});
  }
  io_uring_cq_advance(ring_.get(), seen);
  inFlight_ -= seen;
  return 0;
}

void UringQueue::submit() {
  if (ring_ && io_uring_sq_ready(ring_.get()) > 0)
    io_uring_submit(ring_.get());
}

} // namespace msc::worker
