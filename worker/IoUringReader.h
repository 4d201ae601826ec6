// The io_uring reader of workers, in two modes over one ring of `depth` entries (the plan's io_depth
// for the role: MSCALE_ROLE_<ROLE>_IO_DEPTH names the depth the executor checked):
//  - streaming: readFiles reads a list of files in blocks with up to `depth` reads in flight across
//    files (many small files are in flight at once; one large file is read ahead `depth` blocks),
//    into `depth` page-aligned buffers registered with the kernel once per reader, hands each block to
//    the caller in file order, and reports per file the byte offset up to which everything has been
//    delivered: the basis of exact resume (a restarted worker calls setStartOffset with the offsets of
//    its last snapshot). Keeping that offset is one store per block;
//  - random access: readAt reads (file, offset, length) for loaders that need one record before they
//    know where the next one is; files stay open for the reader's life.
// Needs only liburing: workers link it without the executor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace msc::worker {

class UringQueue;

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

class IoUringReader {
public:
  struct FileOffset {
    std::string path;
    uint64_t offset = 0; // bytes delivered in order from the start (or from the start offset)
    uint64_t size = 0;
    bool done = false;
  };
  // Called in order within each file; blocks of different files may interleave.
  using Consumer = std::function<void(size_t fileIndex, uint64_t offset, std::string_view data)>;

  // nullptr with `error` set when io_uring refuses the depth.
  static std::unique_ptr<IoUringReader> create(unsigned depth, size_t blockSize, std::string &error);
  // Depth from MSCALE_ROLE_<ROLE>_IO_DEPTH (as the executor set it), else `fallbackDepth`.
  static std::unique_ptr<IoUringReader> forRole(const std::string &role, unsigned fallbackDepth, size_t blockSize,
                                                std::string &error);
  ~IoUringReader();
  IoUringReader(const IoUringReader &) = delete;
  IoUringReader &operator=(const IoUringReader &) = delete;

  // How readFiles opens and reads its files.
  struct Streaming {
    // O_DIRECT where the file system allows it (others are read through the page cache): reads go to
    // the device at the queue's depth without a copy through the page cache; what is cached is not
    // used. Needs a block size that is a multiple of 4 KiB (otherwise the page cache is used).
    bool direct = false;
    // IOSQE_ASYNC on buffered reads: go to the kernel's worker threads at once rather than trying
    // each read inline first. The copies out of the page cache then run on other CPUs while the
    // caller consumes earlier blocks (reader_bench: faster warm and on a large file cold).
    bool asyncBuffered = true;
    // Buffered files: take what the page cache holds with a non-blocking read (preadv2 RWF_NOWAIT,
    // one system call, the copy a read() loop makes) and queue only what it lacks. Warm data then
    // costs what read() costs, in a buffer that is still in the CPU's cache; cold data one failed call.
    // Off by default: every read then goes through the ring at the plan's depth, as the executor's
    // tests of the reader expect.
    bool pageCacheFirst = false;
  };
  void setStreaming(Streaming s) { streaming_ = s; }
  Streaming streaming() const { return streaming_; }

  // ---- streaming ----
  // Resume: reading of `path` starts at `offset` (a block boundary is not required).
  void setStartOffset(const std::string &path, uint64_t offset) { start_[path] = offset; }
  // Reads every file to its end. False with `error` naming the file and offset on the first error
  // (e.g. EIO); offsets() then still says how far each file was delivered.
  bool readFiles(const std::vector<std::string> &paths, const Consumer &consume, std::string &error);
  const std::vector<FileOffset> &offsets() const { return offsets_; }
  // "offset<TAB>size<TAB>path" per line, written to a temporary file and renamed.
  bool writeOffsets(const std::string &path, std::string &error) const;

  // ---- random access ----
  // Reads up to `size` bytes of `path` at `offset`: the count read (short only at the end of the
  // file, 0 past it) or -errno.
  int64_t readAt(const std::string &path, uint64_t offset, void *buf, size_t size);

  unsigned depth() const { return depth_; }
  size_t blockSize() const { return blockSize_; }
  uint64_t bytesRead() const { return bytes_; }
  unsigned maxInFlight() const; // the deepest queue reached
  bool buffersRegistered() const; // readFiles's buffers, once it has run

private:
  IoUringReader() = default;
  std::unique_ptr<UringQueue> queue_;
  unsigned depth_ = 0;
  size_t blockSize_ = 0;
  uint64_t bytes_ = 0;
  Streaming streaming_;
  std::map<std::string, uint64_t> start_;
  std::vector<FileOffset> offsets_;
  OpenFiles files_; // readAt's
};

// The baselines the benchmarks and the fallbacks use, with the same contracts as readFiles and
// readAt: open + read() loop + close per file; pread() until `size` bytes are in or the file ends.
bool readFilesPlain(const std::vector<std::string> &paths, size_t blockSize, const IoUringReader::Consumer &consume,
                    std::string &error);
int64_t preadFully(int fd, uint64_t offset, void *buf, size_t size);

} // namespace msc::worker
