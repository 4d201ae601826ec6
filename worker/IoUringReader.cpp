#include "worker/IoUringReader.h"

#include "worker/UringQueue.h"
#include "worker/WorkerApi.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace msc::worker {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

// Reads until `size` bytes are in or the file ends; `once(offset, ptr, len)` does one read and
// returns the bytes read, 0 at the end, or -errno (-EINTR is retried).
template <class ReadOnce> int64_t readFully(void *buf, uint64_t offset, size_t size, ReadOnce once) {
  auto *p = static_cast<char *>(buf);
  size_t done = 0;
  while (done < size) {
    int64_t n = once(offset + done, p + done, size - done);
    if (n == -EINTR)
      continue;
    if (n < 0)
      return n;
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

} // namespace

OpenFiles::~OpenFiles() {
  for (auto &[path, fd] : fds_)
    ::close(fd);
}

int OpenFiles::fd(const std::string &path) {
  auto it = fds_.find(path);
  if (it != fds_.end())
    return it->second;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  fds_.emplace(path, fd);
  return fd;
}

std::unique_ptr<IoUringReader> IoUringReader::create(unsigned depth, size_t blockSize, std::string &error) {
  if (depth == 0 || blockSize == 0) {
    error = "depth and block size must be positive";
    return nullptr;
  }
  std::unique_ptr<IoUringReader> r(new IoUringReader());
  int err = 0;
  r->queue_ = UringQueue::create(depth, error, err);
  if (!r->queue_)
    return nullptr;
  r->depth_ = depth;
  // One read is at most 1 GiB (an sqe's length is 32 bits; a power of two keeps O_DIRECT aligned).
  r->blockSize_ = std::min<size_t>(blockSize, size_t(1) << 30);
  return r;
}

std::unique_ptr<IoUringReader> IoUringReader::forRole(const std::string &role, unsigned fallbackDepth,
                                                      size_t blockSize, std::string &error) {
  unsigned depth = fallbackDepth;
  if (const char *v = std::getenv(mscale::worker::roleVariable(role.c_str(), "_IO_DEPTH").c_str())) {
    char *end = nullptr;
    errno = 0;
    unsigned long d = std::strtoul(v, &end, 10);
    if (*v && !*end && errno == 0 && d > 0 && d <= UINT_MAX)
      depth = static_cast<unsigned>(d);
  }
  return create(depth, blockSize, error);
}

IoUringReader::~IoUringReader() = default;

unsigned IoUringReader::maxInFlight() const { return queue_->maxInFlight(); }
bool IoUringReader::buffersRegistered() const { return queue_->buffersRegistered(); }

namespace {

constexpr uint64_t kDirectAlign = 4096;

struct FileState {
  int fd = -1;
  bool direct = false;
  bool done = false;
  bool noWait = false; // try the page cache synchronously first
  uint64_t size = 0, submitAt = 0, deliverAt = 0;
  std::vector<unsigned> ready; // buffers read completely, not yet delivered (few: at most the depth)
};

// What one buffer holds: bytes [offset, offset + length) of a file, of which the first `skip` are
// before the resume offset and not delivered; `got` bytes are in so far.
struct Block {
  size_t file = 0;
  uint64_t offset = 0;
  uint32_t length = 0, readLength = 0, skip = 0, got = 0;
};

} // namespace

namespace {

// One readFiles call: the files in order, a block per buffer, the buffers free and the blocks to
// read again. Each file's bytes are handed over in order, whatever order the reads complete in.
class BatchRead {
public:
  BatchRead(UringQueue &queue, const IoUringReader::Streaming &streaming, size_t blockSize, unsigned bufferCount,
            const std::vector<std::string> &paths, const IoUringReader::Consumer &consume,
            std::vector<IoUringReader::FileOffset> &offsets, uint64_t &bytes, std::string &error)
      : queue_(queue), streaming_(streaming), blockSize_(blockSize), paths_(paths), consume_(consume),
        offsets_(offsets), bytes_(bytes), error_(error), direct_(streaming.direct && blockSize % kDirectAlign == 0),
        files_(paths.size()), blocks_(bufferCount) {
    for (unsigned i = bufferCount; i-- > 0;)
      freeBuffers_.push_back(i);
  }
  ~BatchRead() {
    for (FileState &f : files_)
      if (f.fd >= 0)
        ::close(f.fd);
  }

  // After an error nothing more is queued, but what is in flight is waited for (it lands in the
  // buffers) and delivered where it is next in its file: the caller keeps every block read correctly.
  bool run() {
    for (;;) {
      fillQueue();
      if (queue_.inFlight() == 0)
        break; // everything delivered, or an error with nothing left in flight
      if (int rc = queue_.submitAndWait(completions_); rc < 0) {
        fail("io_uring_submit_and_wait: " + errnoText(-rc));
        break; // the queue waited for what the kernel had taken; nothing is in flight
      }
      for (const UringQueue::Completion &c : completions_)
        complete(c);
      for (size_t i : active_)
        deliver(i);
      std::erase_if(active_, [&](size_t i) { return files_[i].done; });
    }
    return ok_;
  }

private:
  // The rest of short reads first, then new blocks in file order.
  void fillQueue() {
    while (ok_ && !queue_.full() && !retries_.empty()) {
      queueBlock(retries_.back());
      retries_.pop_back();
    }
    while (ok_ && !freeBuffers_.empty() && !queue_.full() && next_ < files_.size()) {
      FileState &f = files_[next_];
      if (f.fd < 0 && !f.done && !open(next_))
        break;
      if (f.submitAt >= f.size) {
        if (f.deliverAt >= f.size && !f.done)
          finishFile(next_);
        ++next_;
        continue;
      }
      unsigned b = freeBuffers_.back();
      freeBuffers_.pop_back();
      uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(blockSize_, f.size - f.submitAt));
      // O_DIRECT reads whole 4 KiB units; the last one returns what the file holds.
      uint32_t readLen = f.direct ? static_cast<uint32_t>((len + kDirectAlign - 1) / kDirectAlign * kDirectAlign) : len;
      uint32_t skip = static_cast<uint32_t>(f.deliverAt > f.submitAt ? f.deliverAt - f.submitAt : 0);
      blocks_[b] = {next_, f.submitAt, len, readLen, skip, 0};
      f.submitAt += len;
      if (f.noWait && readCached(b)) {
        f.ready.push_back(b);
        deliver(next_); // in order unless earlier blocks of the file are still in flight
        continue;
      }
      queueBlock(b);
    }
  }

  // One completed read: the block is whole (ready), partly read (again), or failed.
  void complete(const UringQueue::Completion &c) {
    unsigned b = static_cast<unsigned>(c.tag);
    Block &k = blocks_[b];
    if (c.result == -EAGAIN || c.result == -EINTR) {
      retries_.push_back(b);
      return;
    }
    if (c.result < 0) {
      fail("read of '" + paths_[k.file] + "' at offset " + std::to_string(k.offset + k.got) + ": " +
           errnoText(-c.result));
      freeBuffers_.push_back(b);
      return;
    }
    if (c.result == 0 && k.got < k.length) {
      fail("read of '" + paths_[k.file] + "' at offset " + std::to_string(k.offset + k.got) +
           ": the file ended before its size, " + std::to_string(files_[k.file].size) + " bytes");
      freeBuffers_.push_back(b);
      return;
    }
    k.got += static_cast<uint32_t>(c.result);
    if (k.got < k.length) {
      // Short read (an interrupted one): read the rest; O_DIRECT again from a 4 KiB boundary.
      if (files_[k.file].direct)
        k.got = static_cast<uint32_t>(k.got / kDirectAlign * kDirectAlign);
      retries_.push_back(b);
      return;
    }
    files_[k.file].ready.push_back(b);
  }

  void finishFile(size_t i) {
    FileState &f = files_[i];
    ::close(f.fd);
    f.fd = -1;
    f.done = true;
    offsets_[i].done = true;
  }

  void fail(std::string message) {
    if (ok_)
      error_ = std::move(message);
    ok_ = false;
  }

  void queueBlock(unsigned b) {
    Block &k = blocks_[b];
    const FileState &f = files_[k.file];
    queue_.queueRead(f.fd, queue_.buffer(b) + k.got, k.readLength - k.got, k.offset + k.got, b, static_cast<int>(b),
                     streaming_.asyncBuffered && !f.direct);
  }

  // Hands over the blocks of file `i` that are next in order; closes the file once it is all delivered.
  void deliver(size_t i) {
    FileState &f = files_[i];
    if (f.done)
      return;
    for (bool found = true; found && !f.ready.empty();) {
      found = false;
      for (size_t r = 0; r < f.ready.size(); ++r) {
        unsigned b = f.ready[r];
        const Block &k = blocks_[b];
        if (k.offset + k.skip != f.deliverAt)
          continue;
        uint32_t n = k.length - k.skip;
        consume_(i, f.deliverAt, std::string_view(queue_.buffer(b) + k.skip, n));
        f.deliverAt += n;
        bytes_ += n;
        offsets_[i].offset = f.deliverAt;
        f.ready[r] = f.ready.back();
        f.ready.pop_back();
        freeBuffers_.push_back(b);
        found = true;
        break;
      }
    }
    if (f.deliverAt >= f.size && f.submitAt >= f.size)
      finishFile(i);
  }

  // What the page cache already holds is a copy away: read it now, without blocking (RWF_NOWAIT), and
  // leave only the rest to the ring. True when the block is complete.
  bool readCached(unsigned b) {
    Block &k = blocks_[b];
    FileState &f = files_[k.file];
    iovec iov{queue_.buffer(b), k.readLength};
    ssize_t n = ::preadv2(f.fd, &iov, 1, static_cast<off_t>(k.offset), RWF_NOWAIT);
    if (n < 0 && errno == EOPNOTSUPP)
      f.noWait = false; // this file system cannot say "not cached"; the ring reads all of it
    if (n <= 0)
      return false;
    k.got = static_cast<uint32_t>(n);
    return k.got >= k.length;
  }

  bool open(size_t i) {
    FileState &f = files_[i];
    if (direct_) {
      f.fd = ::open(paths_[i].c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
      f.direct = f.fd >= 0;
    }
    if (f.fd < 0) // not asked for O_DIRECT, or the file system refuses it (tmpfs: EINVAL)
      f.fd = ::open(paths_[i].c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
      fail("cannot open '" + paths_[i] + "': " + errnoText(errno));
      return false;
    }
    f.size = static_cast<uint64_t>(st.st_size);
    f.noWait = streaming_.pageCacheFirst && !f.direct;
    f.deliverAt = std::min(offsets_[i].offset, f.size);
    f.submitAt = f.direct && f.deliverAt < f.size ? f.deliverAt / kDirectAlign * kDirectAlign : f.deliverAt;
    offsets_[i].offset = f.deliverAt;
    offsets_[i].size = f.size;
    active_.push_back(i);
    return true;
  }

  UringQueue &queue_;
  const IoUringReader::Streaming &streaming_;
  const size_t blockSize_;
  const std::vector<std::string> &paths_;
  const IoUringReader::Consumer &consume_;
  std::vector<IoUringReader::FileOffset> &offsets_;
  uint64_t &bytes_;
  std::string &error_;
  const bool direct_;
  std::vector<FileState> files_;
  std::vector<Block> blocks_;
  std::vector<unsigned> freeBuffers_, retries_;
  std::vector<size_t> active_; // files opened and not done, in order
  std::vector<UringQueue::Completion> completions_;
  size_t next_ = 0; // the first file not fully queued
  bool ok_ = true;
};

} // namespace

bool IoUringReader::readFiles(const std::vector<std::string> &paths, const Consumer &consume, std::string &error) {
  offsets_.clear();
  for (const std::string &p : paths) {
    auto it = start_.find(p);
    offsets_.push_back({p, it == start_.end() ? 0 : it->second, 0, false});
  }
  if (!queue_->usable()) {
    error = "the reader's io_uring could not be set up again after an error";
    return false;
  }
  // Blocks that complete ahead of an earlier one of their file wait for it in their buffer; a quarter
  // more buffers than the depth keeps the queue full meanwhile.
  const unsigned bufferCount = depth_ + (depth_ + 3) / 4;
  if (!queue_->provideBuffers(bufferCount, blockSize_)) {
    error = "cannot allocate " + std::to_string(bufferCount) + " buffers of " + std::to_string(blockSize_) + " bytes";
    return false;
  }
  return BatchRead(*queue_, streaming_, blockSize_, bufferCount, paths, consume, offsets_, bytes_, error).run();
}

int64_t IoUringReader::readAt(const std::string &path, uint64_t offset, void *buf, size_t size) {
  int fd = files_.fd(path);
  if (fd < 0)
    return fd;
  if (!queue_->usable())
    return -EIO;
  UringQueue &queue = *queue_;
  std::vector<UringQueue::Completion> done;
  int64_t got = readFully(buf, offset, size, [fd, &queue, &done](uint64_t at, char *p, size_t n) -> int64_t {
    done.clear();
    queue.queueRead(fd, p, static_cast<unsigned>(std::min<size_t>(n, 1u << 30)), at, 0, -1, false);
    // One system call submits and waits; -EINTR there means nothing was reaped yet.
    while (done.empty())
      if (int rc = queue.submitAndWait(done); rc < 0)
        return rc;
    return done.front().result;
  });
  if (got > 0)
    bytes_ += static_cast<uint64_t>(got);
  return got;
}

bool IoUringReader::writeOffsets(const std::string &path, std::string &error) const {
  std::string text;
  for (const FileOffset &o : offsets_)
    text += std::to_string(o.offset) + "\t" + std::to_string(o.size) + "\t" + o.path + "\n";
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = tmp + ": " + errnoText(errno);
    return false;
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": " + errnoText(ok ? errno : err);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool readFilesPlain(const std::vector<std::string> &paths, size_t blockSize, const IoUringReader::Consumer &consume,
                    std::string &error) {
  std::vector<char> buf(blockSize);
  for (size_t i = 0; i < paths.size(); ++i) {
    int fd = ::open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = "cannot open '" + paths[i] + "': " + errnoText(errno);
      return false;
    }
    uint64_t off = 0;
    for (;;) {
      ssize_t n = ::read(fd, buf.data(), blockSize);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        error = "read of '" + paths[i] + "': " + errnoText(errno);
        ::close(fd);
        return false;
      }
      if (n == 0)
        break;
      consume(i, off, std::string_view(buf.data(), static_cast<size_t>(n)));
      off += static_cast<uint64_t>(n);
    }
    ::close(fd);
  }
  return true;
}

int64_t preadFully(int fd, uint64_t offset, void *buf, size_t size) {
  return readFully(buf, offset, size, [fd](uint64_t at, char *p, size_t n) -> int64_t {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(at));
    return got < 0 ? -errno : got;
  });
}

} // namespace msc::worker
