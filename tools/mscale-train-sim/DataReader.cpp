#include "tools/mscale-train-sim/DataReader.h"

#include <cerrno>

namespace msc::workload {

int64_t PreadReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  int fd = files_.fd(path);
  if (fd < 0)
    return fd;
  return worker::preadFully(fd, offset, buf, size);
}

std::unique_ptr<UringReader> UringReader::create(unsigned depth, std::string &error) {
  // Records are read whole, so the block size of the streaming mode does not matter here.
  std::unique_ptr<worker::IoUringReader> r = worker::IoUringReader::create(depth, 1, error);
  return r ? std::unique_ptr<UringReader>(new UringReader(std::move(r))) : nullptr;
}

int64_t FaultInjectingReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  if (armed_)
    return -EIO;
  return inner_.read(path, offset, buf, size);
}

} // namespace msc::workload
