// The sequential record reader of loaders that need each record before they know the next offset
// (IoUringReader::readAt keeps one read in flight for them): a window of `depth` large aligned blocks
// read ahead of the consumer's position through one io_uring queue (buffers registered once,
// submissions batched, IOSQE_ASYNC for buffered files), serving readAt(offset, length) from the window
// when it hits and with a plain pread when it misses (random access costs what pread costs).
//
// A read starts a window when it continues the previous one (at or within 4 KiB past its end, or at the
// record after it in the file's record index), or when it is the first read of the file and the index
// says a record starts there (a loader starting, or resuming at any record), or a read of the file's
// first record (a loader starting the file again, as each epoch does). Any other read is random
// access: one pread. With
// a record index the window skips blocks that hold no record bytes, so records that are not contiguous
// are read ahead too. The reader keeps no position of its own beyond the window: the loader keeps its
// offsets, which is what exact resume needs.
#pragma once

#include "worker/IoUringReader.h"
#include "worker/RecordIndex.h"
#include "worker/UringQueue.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msc::worker {

class ReadAheadReader {
public:
  struct Options {
    unsigned depth = 8;         // blocks in flight ahead of the consumer (the plan's io depth)
    size_t blockSize = 1 << 20; // a multiple of 4 KiB; blocks start at multiples of it
    bool asyncBuffered = true;  // IOSQE_ASYNC: the page-cache copies run on the kernel's workers
    // Sequential reads of at least blockSize / 16 bytes that the window does not hold take what the page cache
    // holds first, straight into the caller's buffer (preadv2 RWF_NOWAIT: one copy, as pread), and
    // start or use the window only for what it lacks: cached large records are not copied twice.
    bool pageCacheFirst = true;
  };
  struct Stats {
    uint64_t hits = 0;        // reads served from the window
    uint64_t misses = 0;      // reads served by pread
    uint64_t pastEnd = 0;     // reads at or past the end of the file (a pread: the file may have grown)
    uint64_t cached = 0;      // large reads the page cache gave whole (pageCacheFirst)
    uint64_t blocksRead = 0;  // blocks the window read
    uint64_t windowStarts = 0;
  };

  // nullptr with `error` when io_uring refuses the depth or the options make no sense.
  static std::unique_ptr<ReadAheadReader> create(const Options &options, std::string &error);
  ~ReadAheadReader();
  ReadAheadReader(const ReadAheadReader &) = delete;
  ReadAheadReader &operator=(const ReadAheadReader &) = delete;

  // Files this reader first touches get their record index from RecordIndex::load with `scan` (cached
  // beside the file); a file the scanner refuses is read without an index.
  void setScanner(RecordIndex::Scanner scan) { scan_ = std::move(scan); }
  // The index of `path`, given by a caller that has one (a dataset's own index).
  void setIndex(const std::string &path, RecordIndex index);
  const RecordIndex *index(const std::string &path) const;

  // Reads up to `size` bytes of `path` at `offset`: the count read (short only at the end of the
  // file, 0 past it) or -errno, as IoUringReader::readAt.
  int64_t readAt(const std::string &path, uint64_t offset, void *buf, size_t size);

  const Stats &stats() const { return stats_; }
  unsigned depth() const { return options_.depth; }
  size_t blockSize() const { return options_.blockSize; }
  bool buffersRegistered() const;

private:
  struct Slot {
    enum State { Free, InFlight, Ready, Abandoned };
    State state = Free;
    uint64_t offset = 0;
    uint32_t length = 0; // asked for
    uint32_t got = 0;    // read so far (short at the end of the file)
    int error = 0;
  };
  explicit ReadAheadReader(const Options &options);
  int switchFile(const std::string &path);
  bool continuesPrevious(uint64_t offset) const;
  size_t fromPageCache(uint64_t offset, void *buf, size_t size);
  void startWindow(uint64_t offset);
  void abandonWindow();
  void popFront();
  void fill();
  void reap(); // waits for at least one completion
  int64_t serve(uint64_t offset, char *buf, size_t size);

  Options options_;
  std::unique_ptr<UringQueue> queue_;
  std::vector<Slot> slots_;
  std::vector<UringQueue::Completion> completions_; // reap's, kept so a wait allocates nothing
  std::deque<unsigned> window_; // slots, in file order
  Stats stats_;
  RecordIndex::Scanner scan_;
  std::map<std::string, RecordIndex> indexes_;
  std::map<std::string, bool> scanned_; // paths the scanner was tried on
  OpenFiles files_;
  // The file the window is over.
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  const RecordIndex *index_ = nullptr;
  uint64_t next_ = 0;          // where the window's next block would start
  unsigned allowed_ = 0;       // blocks the window may hold now (it grows to the depth)
  uint64_t lastEnd_ = ~0ULL;   // where the previous read ended
};

} // namespace msc::worker
