#include "tools/mscale-train-sim/DataReader.h"

#include <cerrno>

namespace msc::workload {

int64_t PreadReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  int fd = files_.fd(path);
  if (fd < 0)
    return fd;
  return worker::preadFully(fd, offset, buf, size);
}

std::unique_ptr<UringReader> UringReader::create(unsigned depth, worker::RecordIndex::Scanner scan,
                                                 std::string &error) {
  worker::ReadAheadReader::Options options;
  options.depth = depth;
  std::unique_ptr<worker::ReadAheadReader> r = worker::ReadAheadReader::create(options, error);
  if (!r)
    return nullptr;
  r->setScanner(std::move(scan));
  return std::unique_ptr<UringReader>(new UringReader(std::move(r)));
}

int64_t FaultInjectingReader::read(const std::string &path, uint64_t offset, void *buf, size_t size) {
  if (armed_)
    return -EIO;
  return inner_.read(path, offset, buf, size);
}

} // namespace msc::workload
