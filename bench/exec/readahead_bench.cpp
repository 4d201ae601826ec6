// readahead_bench: a record loader's reads (one record at a time, each needed before the next) through
// the worker's read-ahead reader against a pread() loop (the baseline) and against IoUringReader::readAt
// (one read in flight), on the same file, in one run: sequential over every record and random records,
// page cache dropped before every cold run and kept for the warm ones, at several record sizes. Prints
// a Markdown table for docs/PERFORMANCE.md: medians of --reps runs, the methods interleaved within each
// repetition so that the load of a shared machine falls on all of them alike.
//
//   readahead_bench [--dir DIR] [--reps N] [--depth D] [--block BYTES] [--mib FILE_MIB] [--random N] [--async 0|1]
//
// The file (default 128 MiB) is written once under DIR (default: a new directory under /var/tmp; it must
// not be tmpfs for the cold cases). Cold: `echo 3 > /proc/sys/vm/drop_caches` (root); where that is
// refused, posix_fadvise(DONTNEED), which the output then says. Records are back to back; the read-ahead
// reader is given their index (what a dataset's own index gives it) and, in another row, none.
#include "bench/exec/DropPageCache.h"
#include "worker/IoUringReader.h"
#include "worker/ReadAheadReader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace msc::worker;

namespace {

struct Options {
  std::string dir;
  int reps = 5;
  unsigned depth = 8;
  size_t block = 1 << 20;
  uint64_t mib = 128;
  size_t random = 2048;
  bool async = true;
};

std::string coldMethod;

void dropCaches(const std::string &path) { coldMethod = msc::bench::dropPageCache({path}); }

uint64_t touched = 0;
// The loader looks at its record: one byte per 4 KiB page and the first and last byte.
void touch(const std::vector<char> &buf, size_t n) {
  for (size_t i = 0; i < n; i += 4096)
    touched += static_cast<unsigned char>(buf[i]);
  if (n)
    touched += static_cast<unsigned char>(buf[n - 1]);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

using ReadFn = std::function<int64_t(uint64_t offset, void *buf, size_t size)>;

// Reads the records at `offsets` (each `record` bytes) in that order; seconds, or -1 on a short read.
double run(const ReadFn &read, const std::vector<uint64_t> &offsets, size_t record) {
  std::vector<char> buf(record);
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t off : offsets) {
    if (read(off, buf.data(), record) != static_cast<int64_t>(record))
      return -1;
    touch(buf, record);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--dir")
      o.dir = v;
    else if (a == "--reps")
      o.reps = std::max(1, std::atoi(v.c_str()));
    else if (a == "--depth")
      o.depth = static_cast<unsigned>(std::max(1, std::atoi(v.c_str())));
    else if (a == "--block")
      o.block = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--mib")
      o.mib = std::max<uint64_t>(4, std::strtoull(v.c_str(), nullptr, 10));
    else if (a == "--async")
      o.async = v != "0";
    else if (a == "--random")
      o.random = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "usage: readahead_bench [--dir DIR] [--reps N] [--depth D] [--block BYTES] "
                           "[--mib FILE_MIB] [--random N] [--async 0|1]\n");
      return 2;
    }
  }
  bool ownDir = o.dir.empty();
  if (ownDir) {
    char tmpl[] = "/var/tmp/msc-readahead-bench-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      std::perror("mkdtemp");
      return 1;
    }
    o.dir = tmpl;
  }
  const uint64_t size = o.mib << 20;
  const std::string path = o.dir + "/records.dat";
  {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != size) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      std::vector<char> chunk(1 << 20);
      for (size_t i = 0; i < chunk.size(); ++i)
        chunk[i] = static_cast<char>(i * 131 + i / 4093);
      for (uint64_t done = 0; fd >= 0 && done < size; done += chunk.size())
        if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size()))
          return std::perror("write"), 1;
      if (fd < 0 || ::close(fd) != 0)
        return std::perror(path.c_str()), 1;
      ::sync();
    }
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::perror(path.c_str()), 1;

  std::printf("file %llu MiB, read-ahead depth %u x %zu KiB blocks%s, %d repetitions, medians; "
              "ratio = the pread() loop's time / this one's\n\n",
              static_cast<unsigned long long>(o.mib), o.depth, o.block >> 10, o.async ? ", IOSQE_ASYNC" : "", o.reps);
  std::printf("| record | access | cache | pread() loop | IoUringReader::readAt | read-ahead, index | "
              "read-ahead, no index | ratio (index) | ratio (no index) | ratio (readAt) |\n"
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t record : {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20}) {
    std::vector<uint64_t> sequential;
    std::vector<RecordSpan> spans;
    for (uint64_t off = 0; off + record <= size; off += record) {
      sequential.push_back(off);
      spans.push_back({off, record});
    }
    std::mt19937_64 rng(42);
    std::vector<uint64_t> random;
    for (size_t i = 0; i < std::min(o.random, sequential.size()); ++i)
      random.push_back(sequential[rng() % sequential.size()]);

    std::string error;
    ReadAheadReader::Options ro;
    ro.depth = o.depth;
    ro.blockSize = o.block;
    ro.asyncBuffered = o.async;
    std::unique_ptr<ReadAheadReader> withIndex = ReadAheadReader::create(ro, error),
                                     noIndex = ReadAheadReader::create(ro, error);
    std::unique_ptr<IoUringReader> one = IoUringReader::create(o.depth, o.block, error);
    if (!withIndex || !noIndex || !one) {
      std::fprintf(stderr, "readahead_bench: %s\n", error.c_str());
      return 1;
    }
    RecordIndex idx;
    if (!RecordIndex::load(
            path,
            [&spans](int, uint64_t, std::vector<RecordSpan> &out, std::string &) {
              out = spans;
              return true;
            },
            idx, error)) {
      std::fprintf(stderr, "readahead_bench: %s\n", error.c_str());
      return 1;
    }
    withIndex->setIndex(path, std::move(idx));
    std::vector<ReadFn> methods = {
        [fd](uint64_t off, void *b, size_t n) { return preadFully(fd, off, b, n); },
        [&](uint64_t off, void *b, size_t n) { return one->readAt(path, off, b, n); },
        [&](uint64_t off, void *b, size_t n) { return withIndex->readAt(path, off, b, n); },
        [&](uint64_t off, void *b, size_t n) { return noIndex->readAt(path, off, b, n); },
    };
    for (const auto *offsets : {&sequential, &random})
      for (bool cold : {true, false}) {
        std::vector<std::vector<double>> runs(methods.size());
        for (int rep = 0; rep < o.reps; ++rep)
          for (size_t m = 0; m < methods.size(); ++m) {
            if (cold)
              dropCaches(path);
            else
              run(methods[0], sequential, record);
            runs[m].push_back(run(methods[m], *offsets, record));
          }
        std::vector<double> med;
        bool failed = false;
        for (auto &r : runs) {
          failed |= std::any_of(r.begin(), r.end(), [](double t) { return t < 0; });
          med.push_back(median(r));
        }
        if (failed) {
          std::printf("| %zu KiB | failed |\n", record >> 10);
          continue;
        }
        std::printf("| %zu KiB | %s (%zu reads) | %s | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.2fx | %.2fx | %.2fx |\n",
                    record >> 10, offsets == &sequential ? "sequential" : "random", offsets->size(),
                    cold ? "cold" : "warm", med[0] * 1e3, med[1] * 1e3, med[2] * 1e3, med[3] * 1e3, med[0] / med[2],
                    med[0] / med[3], med[0] / med[1]);
        std::fflush(stdout);
      }
  }
  std::printf("\ncold: %s\n", coldMethod.c_str());
  std::fprintf(stderr, "(%llu)\n", static_cast<unsigned long long>(touched));
  ::close(fd);
  if (ownDir)
    std::filesystem::remove_all(o.dir);
  return 0;
}
