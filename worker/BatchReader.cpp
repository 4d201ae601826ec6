#include "worker/BatchReader.h"

#include "worker/UringQueue.h"
#include "worker/WorkerApi.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace msc::worker {

std::unique_ptr<BatchReader> BatchReader::create(unsigned depth, size_t chunkBytes, std::string &error, int &err) {
  if (depth == 0 || chunkBytes == 0) {
    error = "queue depth and chunk size must be positive";
    err = EINVAL;
    return nullptr;
  }
  std::unique_ptr<BatchReader> r(new BatchReader());
  r->queue_ = UringQueue::create(depth, error, err);
  if (!r->queue_)
    return nullptr;
  r->depth_ = depth;
  // One sqe reads at most 2^31 - 1 bytes; pieces of a power of two below that keep it simple.
  r->chunkBytes_ = std::min<size_t>(chunkBytes, size_t(1) << 30);
  return r;
}

BatchReader::~BatchReader() = default;

unsigned BatchReader::maxInFlight() const { return queue_->maxInFlight(); }

namespace {

struct State {
  int fd = -1;
  bool opened = false; // the reader opened `fd` and closes it
  uint64_t end = 0;    // offset + length
  uint64_t submitAt = 0;
  uint64_t eof = 0;    // the lowest offset at which a read returned 0
  unsigned pending = 0;
  int err = 0;
  bool done = false;
};

struct Slot {
  size_t request = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
};

} // namespace

int BatchReader::read(ReadRequest *requests, size_t count, std::string &error, size_t &failedIndex) {
  if (!queue_->usable()) {
    error = "the reader's io_uring could not be set up again after an error";
    failedIndex = 0;
    return EIO;
  }
  std::vector<State> states(count);
  std::vector<Slot> slots(depth_);
  std::vector<unsigned> freeSlots;
  for (unsigned i = depth_; i-- > 0;)
    freeSlots.push_back(i);
  std::vector<Slot> retries; // the rest of short reads, and reads the kernel asked to repeat
  std::vector<UringQueue::Completion> completions;
  size_t next = 0;           // the first request not fully queued
  int fatal = 0;

  auto finish = [&](size_t i) {
    State &s = states[i];
    ReadRequest &r = requests[i];
    if (s.opened)
      ::close(s.fd);
    s.fd = -1;
    s.done = true;
    if (s.err) {
      r.result = -s.err;
      return;
    }
    uint64_t got = std::min(s.eof, s.end) - r.offset;
    r.result = static_cast<int64_t>(got);
    bytes_ += got;
  };
  auto finishIfDone = [&](size_t i) {
    State &s = states[i];
    if (!s.done && s.pending == 0 && (s.err || s.submitAt >= s.end))
      finish(i);
  };
  auto fail = [&](size_t i, int err) {
    State &s = states[i];
    if (!s.err)
      s.err = err;
    s.submitAt = s.end; // queue nothing more of it
  };
  auto queue = [&](const Slot &slot) {
    unsigned b = freeSlots.back();
    freeSlots.pop_back();
    slots[b] = slot;
    ReadRequest &r = requests[slot.request];
    queue_->queueRead(states[slot.request].fd, static_cast<char *>(r.buffer) + (slot.offset - r.offset), slot.length,
                      slot.offset, b, -1, false);
    ++states[slot.request].pending;
  };

  for (;;) {
    // Fill the queue: the rest of earlier reads first, then new pieces in request order.
    while (!fatal && !freeSlots.empty() && !retries.empty()) {
      queue(retries.back());
      retries.pop_back();
    }
    while (!fatal && !freeSlots.empty() && next < count) {
      State &s = states[next];
      ReadRequest &r = requests[next];
      if (!s.opened && s.fd < 0 && !s.done) {
        if (r.length && !r.buffer) {
          fail(next, EFAULT);
        } else if (r.offset > UINT64_MAX - r.length || r.offset + r.length > static_cast<uint64_t>(INT64_MAX)) {
          fail(next, EOVERFLOW);
        } else if (r.path) {
          s.fd = ::open(r.path, O_RDONLY | O_CLOEXEC);
          r.openFailed = s.fd < 0;
          if (s.fd < 0)
            fail(next, errno);
          s.opened = s.fd >= 0;
        } else {
          s.fd = r.fd;
          if (s.fd < 0)
            fail(next, EBADF);
        }
        if (!s.err) {
          s.end = r.offset + r.length;
          s.submitAt = r.offset;
          s.eof = UINT64_MAX;
        }
      }
      if (s.submitAt >= s.end) {
        finishIfDone(next);
        ++next;
        continue;
      }
      uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(chunkBytes_, s.end - s.submitAt));
      queue({next, s.submitAt, len});
      s.submitAt += len;
    }
    if (queue_->inFlight() == 0)
      break;
    if (int rc = queue_->submitAndWait(completions); rc < 0) {
      // The queue waited for the reads the kernel took and dropped the rest: every unfinished
      // request fails.
      fatal = -rc;
      error = std::string("io_uring_submit_and_wait: ") + std::strerror(-rc);
      break;
    }
    for (const UringQueue::Completion &c : completions) {
      unsigned b = static_cast<unsigned>(c.tag);
      Slot slot = slots[b];
      freeSlots.push_back(b);
      State &s = states[slot.request];
      --s.pending;
      int res = c.result;
      if (res == -EAGAIN || res == -EINTR) {
        retries.push_back(slot);
      } else if (res < 0) {
        fail(slot.request, -res);
      } else if (res == 0) {
        s.eof = std::min(s.eof, slot.offset);
      } else if (static_cast<uint32_t>(res) < slot.length) {
        // Short: the end of the file (the next read of the rest returns 0) or an interrupted read.
        uint32_t n = static_cast<uint32_t>(res);
        retries.push_back({slot.request, slot.offset + n, slot.length - n});
      }
      if (s.err) // a failed request's queued rest is not read
        retries.erase(std::remove_if(retries.begin(), retries.end(),
                                     [&](const Slot &x) { return x.request == slot.request; }),
                      retries.end());
      bool retried = std::any_of(retries.begin(), retries.end(), [&](const Slot &x) { return x.request == slot.request; });
      if (!retried)
        finishIfDone(slot.request);
    }
  }
  if (fatal) {
    for (size_t i = 0; i < count; ++i)
      if (!states[i].done) {
        states[i].pending = 0;
        fail(i, fatal);
        finish(i);
      }
  }
  for (size_t i = 0; i < count; ++i)
    if (requests[i].result < 0) {
      failedIndex = i;
      int err = static_cast<int>(-requests[i].result);
      if (!fatal) {
        const ReadRequest &r = requests[i];
        std::string what = r.path ? "'" + std::string(r.path) + "'" : "fd " + std::to_string(r.fd);
        error = (r.openFailed ? "cannot open " + what : "read of " + what + " at byte " + std::to_string(r.offset)) +
                ": " + std::strerror(err);
      }
      return err;
    }
  return 0;
}

int roleIoDepth(const char *role, unsigned &depth) {
  const char *v = std::getenv(mscale::worker::roleVariable(role, "_IO_DEPTH").c_str());
  if (!v)
    return ENOENT;
  char *end = nullptr;
  errno = 0;
  unsigned long d = std::strtoul(v, &end, 10);
  if (!*v || *end || errno != 0 || d == 0 || d > UINT_MAX || *v == '-')
    return EINVAL;
  depth = static_cast<unsigned>(d);
  return 0;
}

} // namespace msc::worker
