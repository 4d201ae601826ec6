// How the training workload reads its data files. PreadReader is a plain pread loop; the executor's
// io_uring reader service (issue 6, executor/) plugs in here as another DataReader: the loader only
// asks for (file, byte offset, length) and keeps the offsets itself, which is what exact resume needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

struct io_uring;

namespace msc::workload {

class DataReader {
public:
  virtual ~DataReader() = default;
  // Reads up to `size` bytes of `path` at `offset`: the count read (0 at end of file) or -errno.
  virtual int64_t read(const std::string &path, uint64_t offset, void *buf, size_t size) = 0;
};

// The files a reader keeps open for its life, by path.
class OpenFiles {
public:
  OpenFiles() = default;
  OpenFiles(const OpenFiles &) = delete;
  OpenFiles &operator=(const OpenFiles &) = delete;
  ~OpenFiles();
  int fd(const std::string &path); // the open fd, or -errno

private:
  std::map<std::string, int> fds_;
};

class PreadReader : public DataReader {
public:
  int64_t read(const std::string &path, uint64_t offset, void *buf, size_t size) override;

private:
  OpenFiles files_;
};

// Reads through io_uring: each request is one read submission and its completion (the loader asks
// for one record at a time and needs it before it knows the next offset, so there is never more
// than one in flight). Files stay open for the reader's life.
class UringReader : public DataReader {
public:
  // nullptr with `error` when the kernel refuses io_uring (the caller falls back to PreadReader).
  static std::unique_ptr<UringReader> create(unsigned depth, std::string &error);
  ~UringReader() override;
  int64_t read(const std::string &path, uint64_t offset, void *buf, size_t size) override;

private:
  UringReader() = default;
  std::unique_ptr<io_uring> ring_;
  OpenFiles files_;
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
