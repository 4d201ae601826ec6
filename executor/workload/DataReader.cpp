#include "executor/workload/DataReader.h"

#include <liburing.h>

#include <algorithm>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace msc::workload {

PreadReader::~PreadReader() {
  for (auto &[path, fd] : fds_)
    ::close(fd);
}

int64_t PreadReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  auto it = fds_.find(path);
  if (it == fds_.end()) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return -errno;
    it = fds_.emplace(path, fd).first;
  }
  size_t done = 0;
  auto *p = static_cast<char *>(buf);
  while (done < size) {
    ssize_t n = ::pread(it->second, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
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
  for (auto &[path, fd] : fds_)
    ::close(fd);
  if (ring_)
    io_uring_queue_exit(ring_.get());
}

int64_t UringReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  auto it = fds_.find(path);
  if (it == fds_.end()) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return -errno;
    it = fds_.emplace(path, fd).first;
  }
  size_t done = 0;
  auto *p = static_cast<char *>(buf);
  while (done < size) {
    io_uring_sqe *sqe = io_uring_get_sqe(ring_.get());
    if (!sqe)
      return -EBUSY;
    io_uring_prep_read(sqe, it->second, p + done, static_cast<unsigned>(size - done), offset + done);
    if (int rc = io_uring_submit(ring_.get()); rc < 0)
      return rc;
    io_uring_cqe *cqe = nullptr;
    int rc;
    do
      rc = io_uring_wait_cqe(ring_.get(), &cqe);
    while (rc == -EINTR);
    if (rc < 0)
      return rc;
    int res = cqe->res;
    io_uring_cqe_seen(ring_.get(), cqe);
    if (res < 0)
      return res;
    if (res == 0)
      break;
    done += static_cast<size_t>(res);
  }
  return static_cast<int64_t>(done);
}

int64_t FaultInjectingReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  if (armed_)
    return -EIO;
  return inner_.read(path, offset, buf, size);
}

} // namespace msc::workload
