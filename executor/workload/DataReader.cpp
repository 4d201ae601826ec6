#include "executor/workload/DataReader.h"

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

int64_t FaultInjectingReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  if (armed_)
    return -EIO;
  return inner_.read(path, offset, buf, size);
}

} // namespace msc::workload
