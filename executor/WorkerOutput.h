// What a contract's workers print, kept per rank and attempt (the agent's workers: their stdout
// went to /dev/null and their stderr into the agent's own, unprefixed). Each worker's stdout and
// stderr go through one pipe, as a terminal would interleave them, to DIR/rank<R>.attempt<N>.log
// (a warm standby's: rank<R>.standby.attempt<N>.log). A file is bounded: past maxFileBytes it is
// renamed to .log.1 (the one older piece kept, as logrotate's rotate 1) and a new one begun; the
// newest attemptsKept attempts of each rank are kept. A pump thread copies the pipes; the last line
// each worker wrote is kept for the status ("exit 1: shard 3 is corrupt").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace msc::exec {

struct WorkerOutputOptions {
  uint64_t maxFileBytes = 8u << 20;
  unsigned attemptsKept = 5;
};

class WorkerOutput {
public:
  // DIR is made if it is not there; nullptr with `error` when it cannot be, or the thread not started.
  static std::unique_ptr<WorkerOutput> create(std::string dir, WorkerOutputOptions options, std::string &error);
  ~WorkerOutput(); // drains what the pipes still hold, then stops the pump
  WorkerOutput(const WorkerOutput &) = delete;
  WorkerOutput &operator=(const WorkerOutput &) = delete;

  // The write end of a new worker's pipe (its stdout and stderr; close-on-exec, the caller dup2s it
  // in the child and closes it after the start). -1 with `error`.
  int open(unsigned rank, uint32_t attempt, bool standby, std::string &error);
  // The last non-empty line rank `rank`'s newest worker (not a standby) wrote, after reading what its
  // pipe still holds; empty when it wrote nothing.
  std::string lastLine(unsigned rank);
  const std::string &dir() const { return dir_; }
  // "rank1.attempt2.log": the file of a worker.
  static std::string fileName(unsigned rank, uint32_t attempt, bool standby);

private:
  struct Stream {
    int readFd = -1;
    int fileFd = -1;
    unsigned rank = 0;
    uint32_t attempt = 0;
    bool standby = false;
    std::string path;
    uint64_t bytes = 0;
    std::string partial, last; // the line being written, the last whole non-empty one
  };
  WorkerOutput(std::string dir, WorkerOutputOptions options) : dir_(std::move(dir)), options_(options) {}
  void pump();
  bool drain(Stream &s); // reads what the pipe holds; false at its end
  void write(Stream &s, const char *data, size_t n);
  void close(Stream &s);
  void forgetOldAttempts(unsigned rank);

  std::string dir_;
  WorkerOutputOptions options_;
  int wakeFd_ = -1; // an eventfd: new streams, or the end
  bool stopping_ = false;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::map<unsigned, std::string> lastLines_; // of streams that ended, by rank (newest worker)
  std::map<unsigned, std::vector<uint32_t>> attempts_; // kept attempt numbers per rank, oldest first
  std::thread thread_;
};

} // namespace msc::exec
