// How the training workload reads its data files: through the worker runtime's io_uring reader
// (random-access mode), or a plain pread loop where the kernel refuses io_uring. The loader only asks
// for (file, byte offset, length) and keeps the offsets itself, which is what exact resume needs.
#pragma once

#include "worker/IoUringReader.h"
#include "worker/ReadAheadReader.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace msc::workload {

class DataReader {
public:
  virtual ~DataReader() = default;
  // Reads up to `size` bytes of `path` at `offset`: the count read (0 at end of file) or -errno.
  virtual int64_t read(const std::string &path, uint64_t offset, void *buf, size_t size) = 0;
};

class PreadReader : public DataReader {
public:
  int64_t read(const std::string &path, uint64_t offset, void *buf, size_t size) override;

private:
  worker::OpenFiles files_;
};

// The worker runtime's read-ahead reader: the loader asks for one record at a time and needs it before
// it knows the next offset, so the reader keeps `depth` large blocks in flight ahead of it, knowing the
// record boundaries from the file's record index (built by `scan`, the dataset format's scanner).
class UringReader : public DataReader {
public:
  // nullptr with `error` when the kernel refuses io_uring (the caller falls back to PreadReader).
  static std::unique_ptr<UringReader> create(unsigned depth, worker::RecordIndex::Scanner scan, std::string &error);
  int64_t read(const std::string &path, uint64_t offset, void *buf, size_t size) override {
    return reader_->readAt(path, offset, buf, size);
  }
  const worker::ReadAheadReader &reader() const { return *reader_; }

private:
  explicit UringReader(std::unique_ptr<worker::ReadAheadReader> reader) : reader_(std::move(reader)) {}
  std::unique_ptr<worker::ReadAheadReader> reader_;
};

// Fails every read with -EIO once armed (what a failing NVMe namespace looks like to the worker).
class FaultInjectingReader : public DataReader {
public:
  explicit FaultInjectingReader(DataReader &inner) : inner_(inner) {}
  void arm() { armed_ = true; }
  int64_t read(const std::string &path, uint64_t offset, void *buf, size_t size) override;

private:
  DataReader &inner_;
  bool armed_ = false;
};

} // namespace msc::workload
