#include "worker/ReadAheadReader.h"

#include "worker/UringQueue.h"

#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace msc::worker {
namespace {
constexpr uint64_t kSequentialSlack = 4096;
} // namespace

std::unique_ptr<ReadAheadReader> ReadAheadReader::create(const Options &options, std::string &error) {
  if (options.depth == 0 || options.blockSize == 0 || options.blockSize % 4096 != 0 ||
      options.blockSize > (1u << 30)) {
    error = "read-ahead needs a depth >= 1 and a block size that is a multiple of 4 KiB up to 1 GiB";
    return nullptr;
  }
  int err = 0;
  std::unique_ptr<UringQueue> queue = UringQueue::create(options.depth, error, err);
  if (!queue)
    return nullptr;
  if (!queue->provideBuffers(options.depth, options.blockSize)) {
    error = "cannot allocate " + std::to_string(options.depth) + " read-ahead blocks of " +
            std::to_string(options.blockSize) + " bytes";
    return nullptr;
  }
  std::unique_ptr<ReadAheadReader> r(new ReadAheadReader(options));
  r->queue_ = std::move(queue);
  r->slots_.resize(options.depth);
  return r;
}

ReadAheadReader::ReadAheadReader(const Options &options) : options_(options) {}

ReadAheadReader::~ReadAheadReader() {
  // In-flight reads write into the queue's buffers: wait for them before the buffers go.
  abandonWindow();
  while (queue_->usable() && queue_->inFlight() > 0)
    reap();
}

bool ReadAheadReader::buffersRegistered() const { return queue_->buffersRegistered(); }

void ReadAheadReader::setIndex(const std::string &path, RecordIndex index) {
  indexes_[path] = std::move(index);
  if (path == path_)
    index_ = &indexes_[path];
}

const RecordIndex *ReadAheadReader::index(const std::string &path) const {
  auto it = indexes_.find(path);
  return it == indexes_.end() ? nullptr : &it->second;
}

int ReadAheadReader::switchFile(const std::string &path) {
  int fd = files_.fd(path);
  if (fd < 0)
    return fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return -errno;
  abandonWindow();
  path_ = path, fd_ = fd, size_ = static_cast<uint64_t>(st.st_size), lastEnd_ = ~0ULL;
  if (scan_ && !indexes_.count(path) && !scanned_[path]) {
    scanned_[path] = true;
    RecordIndex idx;
    std::string error;
    if (RecordIndex::load(path, scan_, idx, error))
      indexes_[path] = std::move(idx);
  }
  auto it = indexes_.find(path);
  index_ = it == indexes_.end() ? nullptr : &it->second;
  return 0;
}

void ReadAheadReader::abandonWindow() {
  for (unsigned s : window_)
    slots_[s].state = slots_[s].state == Slot::InFlight ? Slot::Abandoned : Slot::Free;
  window_.clear();
}

void ReadAheadReader::popFront() {
  Slot &s = slots_[window_.front()];
  s.state = s.state == Slot::InFlight ? Slot::Abandoned : Slot::Free;
  window_.pop_front();
}

void ReadAheadReader::startWindow(uint64_t offset) {
  abandonWindow();
  next_ = offset / options_.blockSize * options_.blockSize;
  // Two blocks at first, twice as many for every block the consumer finishes, up to the depth: a
  // window started by a read that only looked sequential costs at most two blocks.
  allowed_ = std::min(2u, options_.depth);
  ++stats_.windowStarts;
  fill();
}

void ReadAheadReader::fill() {
  const uint64_t bs = options_.blockSize;
  for (;;) {
    uint64_t at = next_;
    if (index_) { // skip blocks that hold no record bytes
      size_t i = index_->firstEndingAfter(at);
      if (i == index_->records().size())
        break;
      at = std::max(at, index_->records()[i].offset / bs * bs);
    }
    if (at >= size_ || window_.size() >= allowed_ || !queue_->usable())
      break;
    auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot &s) { return s.state == Slot::Free; });
    if (free == slots_.end() || queue_->full()) {
      if (!window_.empty() || queue_->inFlight() == 0)
        break;
      reap(); // every slot holds an abandoned read: the new window needs one of them back
      continue;
    }
    unsigned slot = static_cast<unsigned>(free - slots_.begin());
    uint32_t length = static_cast<uint32_t>(std::min<uint64_t>(bs, size_ - at));
    *free = Slot{Slot::InFlight, at, length, 0, 0};
    queue_->queueRead(fd_, queue_->buffer(slot), length, at, slot, static_cast<int>(slot), options_.asyncBuffered);
    window_.push_back(slot);
    next_ = at + length;
    ++stats_.blocksRead;
  }
  queue_->submit();
}

void ReadAheadReader::reap() {
  std::vector<UringQueue::Completion> &done = completions_; // reused: reap runs once per block
  if (int rc = queue_->submitAndWait(done); rc < 0) {
    // The ring was set up afresh and nothing is in flight any more.
    for (Slot &s : slots_) {
      if (s.state == Slot::Abandoned)
        s.state = Slot::Free;
      else if (s.state == Slot::InFlight)
        s.state = Slot::Ready, s.error = rc;
    }
    return;
  }
  for (const UringQueue::Completion &c : done) {
    Slot &s = slots_[c.tag];
    if (s.state == Slot::Abandoned) {
      s.state = Slot::Free;
      continue;
    }
    if (c.result < 0) {
      s.state = Slot::Ready, s.error = c.result;
      continue;
    }
    s.got += static_cast<uint32_t>(c.result);
    if (c.result > 0 && s.got < s.length) { // interrupted: read the rest of the block
      queue_->queueRead(fd_, queue_->buffer(static_cast<unsigned>(c.tag)) + s.got, s.length - s.got, s.offset + s.got,
                        c.tag, static_cast<int>(c.tag), options_.asyncBuffered);
      continue;
    }
    s.state = Slot::Ready; // short only where the file ended (or was truncated under us)
  }
}

int64_t ReadAheadReader::serve(uint64_t offset, char *buf, size_t size) {
  uint64_t at = offset;
  size_t left = size;
  while (left > 0) {
    if (window_.empty())
      fill();
    if (window_.empty())
      break;
    unsigned slot = window_.front();
    Slot &s = slots_[slot];
    if (at < s.offset)
      break; // between records the index knows of: not read ahead
    while (s.state == Slot::InFlight)
      reap();
    if (s.error) {
      int err = s.error;
      abandonWindow();
      if (at == offset)
        return err;
      break;
    }
    if (at >= s.offset + s.got)
      break; // the file ended in this block
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, s.offset + s.got - at));
    std::memcpy(buf + (at - offset), queue_->buffer(slot) + (at - s.offset), n);
    at += n, left -= n;
    if (at >= s.offset + s.length) {
      allowed_ = std::min(options_.depth, allowed_ * 2);
      popFront();
      fill();
    } else if (s.got < s.length) {
      break;
    }
  }
  if (left > 0) { // what the window could not give (a gap, a grown file, an error part way)
    int64_t got = preadFully(fd_, at, buf + (at - offset), left);
    if (got < 0 && at == offset)
      return got;
    if (got > 0)
      at += static_cast<uint64_t>(got);
  }
  return static_cast<int64_t>(at - offset);
}

bool ReadAheadReader::continuesPrevious(uint64_t offset) const {
  // Right after the previous read (a loader skipping a record's padding): a random read lands there
  // only once in (file size / 4 KiB).
  if (offset >= lastEnd_ && offset - lastEnd_ < kSequentialSlack)
    return true;
  if (!index_)
    return false;
  const std::vector<RecordSpan> &recs = index_->records();
  // The first read of this file (a loader starting, or resuming at a record), or a loader starting the
  // file again (the next epoch).
  if (lastEnd_ == ~0ULL || (!recs.empty() && offset == recs.front().offset))
    return index_->startsRecord(offset);
  // The record after the previous read, however far the gap before it: a random read is not that.
  size_t i = index_->firstEndingAfter(lastEnd_);
  if (i < recs.size() && recs[i].offset < lastEnd_)
    ++i;
  return i < recs.size() && recs[i].offset == offset;
}

size_t ReadAheadReader::fromPageCache(uint64_t offset, void *buf, size_t size) {
  iovec iov{buf, size};
  ssize_t n = ::preadv2(fd_, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT);
  return n > 0 ? static_cast<size_t>(n) : 0; // EAGAIN: not cached; anything else the window will say again
}

int64_t ReadAheadReader::readAt(const std::string &path, uint64_t offset, void *buf, size_t size) {
  if (path != path_ || fd_ < 0)
    if (int rc = switchFile(path); rc < 0)
      return rc;
  if (size == 0)
    return 0;
  bool inWindow = !window_.empty() && offset >= slots_[window_.front()].offset && offset < next_;
  if (inWindow) {
    // The consumer moved on: blocks wholly behind it go back to the free list (and are read again ahead).
    while (!window_.empty() && slots_[window_.front()].offset + slots_[window_.front()].length <= offset)
      popFront();
    inWindow = !window_.empty() && offset >= slots_[window_.front()].offset;
  }
  // What the window does not hold, a large sequential read takes from the page cache first (one copy).
  // Not a random one: where the cache misses, RWF_NOWAIT still starts the kernel's readahead, which a
  // random reader pays for and does not use.
  size_t cached = 0;
  if (!inWindow && options_.pageCacheFirst && size >= options_.blockSize / 16 && offset < size_ &&
      continuesPrevious(offset)) {
    cached = fromPageCache(offset, buf, size);
    lastEnd_ = offset + cached;
    if (cached == size || offset + cached >= size_) {
      ++stats_.cached;
      return static_cast<int64_t>(cached);
    }
    offset += cached, size -= cached, buf = static_cast<char *>(buf) + cached;
  }
  // A read that fails after the page cache gave a part returns that part (short, as read() does).
  auto result = [cached](int64_t got) {
    return got < 0 && cached == 0 ? got : std::max<int64_t>(got, 0) + static_cast<int64_t>(cached);
  };
  if (!inWindow) {
    if (offset >= size_ || !continuesPrevious(offset)) {
      ++(offset >= size_ ? stats_.pastEnd : stats_.misses);
      int64_t got = preadFully(fd_, offset, buf, size);
      lastEnd_ = offset + static_cast<uint64_t>(std::max<int64_t>(got, 0));
      return result(got);
    }
    startWindow(offset);
  }
  ++stats_.hits;
  int64_t got = serve(offset, static_cast<char *>(buf), size);
  lastEnd_ = offset + static_cast<uint64_t>(std::max<int64_t>(got, 0));
  return result(got);
}

} // namespace msc::worker
