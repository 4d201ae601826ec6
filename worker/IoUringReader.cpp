#include "worker/IoUringReader.h"

#include "worker/WorkerApi.h"

#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <sys/stat.h>
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
  r->ring_ = std::make_unique<io_uring>();
  int rc = io_uring_queue_init(depth, r->ring_.get(), 0);
  if (rc < 0) {
    error = "io_uring_queue_init(" + std::to_string(depth) + "): " + errnoText(-rc);
    r->ring_.reset();
    return nullptr;
  }
  r->depth_ = depth;
  r->blockSize_ = blockSize;
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

IoUringReader::~IoUringReader() {
  if (ring_)
    io_uring_queue_exit(ring_.get());
}

namespace {

struct FileState {
  int fd = -1;
  uint64_t size = 0, submitAt = 0, deliverAt = 0;
  bool opened = false;
  std::map<uint64_t, std::pair<unsigned, uint32_t>> ready; // offset -> (buffer, length)
};

struct Slot {
  size_t file = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
};

} // namespace

bool IoUringReader::readFiles(const std::vector<std::string> &paths, const Consumer &consume, std::string &error) {
  offsets_.clear();
  std::vector<FileState> files(paths.size());
  for (const std::string &p : paths) {
    auto it = start_.find(p);
    offsets_.push_back({p, it == start_.end() ? 0 : it->second, 0, false});
  }
  std::vector<char *> buffers(depth_);
  std::vector<Slot> slots(depth_);
  std::deque<unsigned> freeBuffers;
  for (unsigned i = 0; i < depth_; ++i) {
    buffers[i] = static_cast<char *>(std::aligned_alloc(4096, (blockSize_ + 4095) / 4096 * 4096));
    freeBuffers.push_back(i);
  }
  auto cleanup = [&]() {
    for (char *b : buffers)
      std::free(b);
    for (FileState &f : files)
      if (f.fd >= 0)
        ::close(f.fd);
  };
  auto finishFile = [&](size_t i) {
    FileState &f = files[i];
    if (f.fd >= 0)
      ::close(f.fd);
    f.fd = -1;
    offsets_[i].done = true;
  };
  size_t next = 0;   // first file not fully submitted
  unsigned inFlight = 0;
  bool ok = true;
  while (ok) {
    // Fill the queue.
    while (!freeBuffers.empty() && next < files.size()) {
      FileState &f = files[next];
      if (!f.opened) {
        f.opened = true;
        f.fd = ::open(paths[next].c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
          error = "cannot open '" + paths[next] + "': " + errnoText(errno);
          ok = false;
          break;
        }
        f.size = static_cast<uint64_t>(st.st_size);
        f.submitAt = f.deliverAt = std::min(offsets_[next].offset, f.size);
        offsets_[next].offset = f.deliverAt;
        offsets_[next].size = f.size;
      }
      if (f.submitAt >= f.size) {
        if (f.deliverAt >= f.size)
          finishFile(next);
        ++next;
        continue;
      }
      io_uring_sqe *sqe = io_uring_get_sqe(ring_.get());
      if (!sqe)
        break;
      unsigned b = freeBuffers.front();
      freeBuffers.pop_front();
      uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(blockSize_, f.size - f.submitAt));
      slots[b] = {next, f.submitAt, len};
      io_uring_prep_read(sqe, f.fd, buffers[b], len, f.submitAt);
      io_uring_sqe_set_data64(sqe, b);
      f.submitAt += len;
      ++inFlight;
    }
    if (!ok)
      break;
    maxInFlight_ = std::max(maxInFlight_, inFlight);
    if (inFlight == 0)
      break; // everything submitted and delivered
    int rc = io_uring_submit_and_wait(ring_.get(), 1);
    if (rc < 0 && rc != -EINTR) {
      error = "io_uring_submit_and_wait: " + errnoText(-rc);
      ok = false;
      break;
    }
    io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(ring_.get(), head, cqe) {
      ++seen;
      --inFlight;
      unsigned b = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      Slot s = slots[b];
      FileState &f = files[s.file];
      int res = cqe->res;
      if (res >= 0 && static_cast<uint32_t>(res) < s.length) {
        // Short read (rare for regular files): finish the block synchronously.
        ssize_t more = ::pread(f.fd, buffers[b] + res, s.length - res, static_cast<off_t>(s.offset + res));
        res = more < 0 ? -errno : res + static_cast<int>(more);
        if (res >= 0 && static_cast<uint32_t>(res) < s.length)
          res = -EIO;
      }
      if (res < 0) {
        if (ok)
          error = "read of '" + paths[s.file] + "' at offset " + std::to_string(s.offset) + ": " + errnoText(-res);
        ok = false;
        freeBuffers.push_back(b);
        continue;
      }
      f.ready.emplace(s.offset, std::make_pair(b, s.length));
    }
    io_uring_cq_advance(ring_.get(), seen);
    if (!ok)
      break;
    // Deliver in order per file.
    for (size_t i = 0; i < files.size() && i <= next; ++i) {
      FileState &f = files[i];
      while (!f.ready.empty() && f.ready.begin()->first == f.deliverAt) {
        auto [b, len] = f.ready.begin()->second;
        f.ready.erase(f.ready.begin());
        consume(i, f.deliverAt, std::string_view(buffers[b], len));
        f.deliverAt += len;
        bytes_ += len;
        offsets_[i].offset = f.deliverAt;
        freeBuffers.push_back(b);
      }
      if (f.opened && f.fd >= 0 && f.deliverAt >= f.size && f.submitAt >= f.size)
        finishFile(i);
    }
  }
  // Drain what is still in flight before freeing buffers (only on error).
  while (inFlight > 0) {
    io_uring_cqe *cqe;
    if (io_uring_wait_cqe(ring_.get(), &cqe) < 0)
      break;
    io_uring_cqe_seen(ring_.get(), cqe);
    --inFlight;
  }
  cleanup();
  return ok;
}

int64_t IoUringReader::readAt(const std::string &path, uint64_t offset, void *buf, size_t size) {
  int fd = files_.fd(path);
  if (fd < 0)
    return fd;
  io_uring *ring = ring_.get();
  int64_t got = readFully(buf, offset, size, [fd, ring](uint64_t at, char *p, size_t n) -> int64_t {
    io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe)
      return -EBUSY;
    io_uring_prep_read(sqe, fd, p, static_cast<unsigned>(std::min<size_t>(n, 1u << 30)), at);
    // One system call submits and waits; -EINTR means nothing was submitted yet.
    int rc;
    do
      rc = io_uring_submit_and_wait(ring, 1);
    while (rc == -EINTR);
    if (rc < 0)
      return rc;
    io_uring_cqe *cqe = nullptr;
    do
      rc = io_uring_wait_cqe(ring, &cqe);
    while (rc == -EINTR);
    if (rc < 0)
      return rc;
    int res = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    return res;
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
