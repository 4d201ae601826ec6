#include "executor/workload/DataReader.h"

#include <liburing.h>

#include <algorithm>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace msc::workload {
namespace {

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

int64_t PreadReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  int fd = files_.fd(path);
  if (fd < 0)
    return fd;
  return readFully(buf, offset, size, [fd](uint64_t at, char *p, size_t n) -> int64_t {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(at));
    return got < 0 ? -errno : got;
  });
}

std::unique_ptr<UringReader> UringReader::create(unsigned depth, std::string &error) {
  std::unique_ptr<UringReader> r(new UringReader());
  r->ring_ = std::make_unique<io_uring>();
  if (int rc = io_uring_queue_init(std::max(1u, depth), r->ring_.get(), 0); rc < 0) {
    error = std::string("io_uring_queue_init: ") + std::strerror(-rc);
    r->ring_.reset();
    return nullptr;
  }
  return r;
}

UringReader::~UringReader() {
  if (ring_)
    io_uring_queue_exit(ring_.get());
}

int64_t UringReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  int fd = files_.fd(path);
  if (fd < 0)
    return fd;
  io_uring *ring = ring_.get();
  return readFully(buf, offset, size, [fd, ring](uint64_t at, char *p, size_t n) -> int64_t {
    io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe)
      return -EBUSY;
    io_uring_prep_read(sqe, fd, p, static_cast<unsigned>(n), at);
    if (int rc = io_uring_submit(ring); rc < 0)
      return rc;
    io_uring_cqe *cqe = nullptr;
    int rc;
    do
      rc = io_uring_wait_cqe(ring, &cqe);
    while (rc == -EINTR);
    if (rc < 0)
      return rc;
    int res = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    return res;
  });
}

int64_t FaultInjectingReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  if (armed_)
    return -EIO;
  return inner_.read(path, offset, buf, size);
}

} // namespace msc::workload
