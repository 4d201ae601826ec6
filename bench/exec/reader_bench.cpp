// reader_bench: the worker's io_uring streaming reader against a plain open + read() + close loop and
// against fio (io_uring engine, the same queue depth and block size, the same files), all in one run,
// page cache dropped before every cold run and kept for the warm ones. Prints Markdown tables for
// docs/PERFORMANCE.md: medians of --reps runs, the methods interleaved within each repetition so that
// the load of a shared machine falls on all of them alike.
//
//   reader_bench [--dir DIR] [--reps N] [--depth D] [--block BYTES] [--fio PATH]
//
// Data sets: 2000 files x 64 KiB (the image-loader case) and one 256 MiB file, written once under DIR
// (default: a new directory under /tmp; it must not be tmpfs for the cold and O_DIRECT cases).
// Cold: `echo 3 > /proc/sys/vm/drop_caches` (root); where that is refused, posix_fadvise(DONTNEED) on
// every file, which the table then says.
// "no resume bookkeeping" is the same queue, buffers and files, delivering blocks in completion order
// and keeping no per-file offset: what exact resume costs is the difference to the reader.
#include "bench/exec/DropPageCache.h"
#include "worker/IoUringReader.h"
#include "worker/UringQueue.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace msc::worker;

namespace {

struct Options {
  std::string dir;
  std::string fio = "fio";
  int reps = 5;
  unsigned depth = 64;
  size_t block = 1 << 20;
};

struct DataSet {
  std::string name, dir;
  std::vector<std::string> paths;
  uint64_t bytes = 0;
};

bool writeFile(const std::string &path, uint64_t size, char fill) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  std::string chunk(1 << 20, fill);
  for (uint64_t done = 0; done < size;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - done));
    if (::write(fd, chunk.data(), n) != static_cast<ssize_t>(n)) {
      ::close(fd);
      return false;
    }
    done += n;
  }
  return ::close(fd) == 0;
}

DataSet makeSet(const std::string &root, const std::string &name, int files, uint64_t size) {
  DataSet s{name, root + "/" + name, {}, 0};
  std::filesystem::create_directories(s.dir);
  for (int i = 0; i < files; ++i) {
    s.paths.push_back(s.dir + "/f" + std::to_string(i));
    struct stat st;
    if (::stat(s.paths.back().c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != size)
      if (!writeFile(s.paths.back(), size, static_cast<char>('a' + i % 26))) {
        std::fprintf(stderr, "reader_bench: cannot write %s\n", s.paths.back().c_str());
        std::exit(1);
      }
    s.bytes += size;
  }
  ::sync();
  return s;
}

// How the page cache was emptied: the first method that worked.
std::string coldMethod;

void dropCaches(const DataSet &s) { coldMethod = msc::bench::dropPageCache(s.paths); }

void warm(const DataSet &s) {
  std::string error;
  readFilesPlain(s.paths, 1 << 20, [](size_t, uint64_t, std::string_view) {}, error);
}

double seconds(const std::function<bool()> &run) {
  auto t0 = std::chrono::steady_clock::now();
  if (!run())
    return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Every consumer touches one byte per 4 KiB page, as a loader that looks at its data would; the sum
// keeps the compiler from dropping it.
uint64_t touched = 0;
void touch(std::string_view d) {
  for (size_t i = 0; i < d.size(); i += 4096)
    touched += static_cast<unsigned char>(d[i]);
}

// The same queue, buffers, opening and flags as the reader's defaults, but blocks are handed over as they complete and no
// per-file offset is kept: no exact resume.
bool readUnordered(UringQueue &q, const std::vector<std::string> &paths, size_t block, bool direct) {
  struct Slot {
    int fd;
    uint32_t length;
  };
  q.provideBuffers(q.depth(), block);
  std::vector<Slot> slots(q.depth());
  std::vector<unsigned> freeBuffers;
  for (unsigned i = 0; i < q.depth(); ++i)
    freeBuffers.push_back(i);
  std::vector<int> pending(paths.size()), fds(paths.size(), -1);
  std::vector<UringQueue::Completion> done;
  size_t next = 0;
  uint64_t at = 0, size = 0;
  for (;;) {
    while (!freeBuffers.empty() && next < paths.size()) {
      if (fds[next] < 0) {
        fds[next] = ::open(paths[next].c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
        struct stat st;
        if (fds[next] < 0 || ::fstat(fds[next], &st) != 0)
          return false;
        size = static_cast<uint64_t>(st.st_size), at = 0;
      }
      if (at >= size) {
        if (pending[next] == 0)
          ::close(fds[next]);
        ++next;
        continue;
      }
      unsigned b = freeBuffers.back();
      freeBuffers.pop_back();
      uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(block, size - at));
      slots[b] = {fds[next], len};
      ++pending[next];
      q.queueRead(fds[next], q.buffer(b), direct ? (len + 4095) / 4096 * 4096 : len, at, (uint64_t(next) << 32) | b,
                  static_cast<int>(b), !direct); // IOSQE_ASYNC on buffered reads, as the reader's default
      at += len;
    }
    if (q.inFlight() == 0)
      return true;
    if (q.submitAndWait(done) < 0)
      return false;
    for (const UringQueue::Completion &c : done) {
      unsigned b = static_cast<unsigned>(c.tag & 0xffffffffu);
      size_t file = static_cast<size_t>(c.tag >> 32);
      if (c.result < static_cast<int>(slots[b].length))
        return false; // short reads do not happen on these files; the reader proper handles them
      touch(std::string_view(q.buffer(b), slots[b].length));
      freeBuffers.push_back(b);
      if (--pending[file] == 0 && file < next)
        ::close(fds[file]);
    }
  }
}

// Opening, fstat and closing every file: what fio does before its clock starts, and the reader inside.
double openOnly(const DataSet &s) {
  return seconds([&] {
    for (const std::string &p : s.paths) {
      int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat st;
      if (fd < 0 || ::fstat(fd, &st) != 0)
        return false;
      ::close(fd);
    }
    return true;
  });
}

// fio's read bandwidth over the same files at the same depth and block size, in bytes per second; the
// run time is fio's own (its start-up is not counted). Warm runs loop `loops` times over the files.
double fioRate(const Options &o, const DataSet &s, bool direct, int loops) {
  std::string out = s.dir + ".fio.json";
  std::string target = s.paths.size() == 1 ? "--filename=" + s.paths[0] : "--opendir=" + s.dir;
  // fio reads nothing of a file smaller than one block: for the small files its block is the file's
  // size, which is also what the reader asks for (one read per file).
  uint64_t block = std::min<uint64_t>(o.block, s.bytes / s.paths.size());
  std::string cmd = o.fio + " --name=read --rw=read --ioengine=io_uring --fixedbufs --iodepth=" +
                    std::to_string(o.depth) + " --bs=" + std::to_string(block) + " --direct=" +
                    (direct ? "1" : "0") + " --invalidate=0 --loops=" + std::to_string(loops) + " " + target +
                    " --output-format=json --output=" + out + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0)
    return -1;
  FILE *f = std::fopen(out.c_str(), "r");
  if (!f)
    return -1;
  std::string json;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
    json.append(buf, n);
  std::fclose(f);
  std::filesystem::remove(out);
  // The first "bw_bytes" is the job's read bandwidth.
  size_t at = json.find("\"bw_bytes\"");
  return at == std::string::npos ? -1 : std::strtod(json.c_str() + json.find(':', at) + 1, nullptr);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Method {
  std::string name;
  std::function<double(const DataSet &, bool cold)> seconds; // < 0: failed or not available
  std::vector<double> runs;
};

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--dir")
      o.dir = argv[i + 1];
    else if (a == "--reps")
      o.reps = std::atoi(argv[i + 1]);
    else if (a == "--depth")
      o.depth = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (a == "--block")
      o.block = static_cast<size_t>(std::atoll(argv[i + 1]));
    else if (a == "--fio")
      o.fio = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: reader_bench [--dir DIR] [--reps N] [--depth D] [--block BYTES] [--fio PATH]\n");
      return 2;
    }
  }
  bool ownDir = o.dir.empty();
  if (ownDir) {
    char tmpl[] = "/tmp/msc-reader-bench-XXXXXX";
    o.dir = ::mkdtemp(tmpl);
  }
  std::vector<DataSet> sets = {makeSet(o.dir, "small", 2000, 64 << 10), makeSet(o.dir, "large", 1, 256ull << 20)};

  std::string error;
  auto reader = [&](IoUringReader::Streaming mode) {
    std::shared_ptr<IoUringReader> r = IoUringReader::create(o.depth, o.block, error);
    if (!r) {
      std::fprintf(stderr, "reader_bench: %s\n", error.c_str());
      std::exit(1);
    }
    r->setStreaming(mode);
    return r;
  };
  auto viaReader = [&](std::shared_ptr<IoUringReader> r) {
    return [r, &error](const DataSet &s, bool) {
      return seconds([&] { return r->readFiles(s.paths, [](size_t, uint64_t, std::string_view d) { touch(d); }, error); });
    };
  };
  int err = 0;
  std::shared_ptr<UringQueue> rawBuffered = UringQueue::create(o.depth, error, err),
                              rawDirect = UringQueue::create(o.depth, error, err);
  auto unordered = [&](std::shared_ptr<UringQueue> q, bool direct) {
    return [q, direct, &o](const DataSet &s, bool) {
      return seconds([&] { return readUnordered(*q, s.paths, o.block, direct); });
    };
  };
  auto fio = [&](bool direct) {
    return [direct, &o](const DataSet &s, bool cold) {
      int loops = cold ? 1 : 4;
      double rate = fioRate(o, s, direct, loops);
      return rate <= 0 ? -1 : static_cast<double>(s.bytes) / rate;
    };
  };
  std::vector<Method> methods = {
      {"open + read() + close", [&](const DataSet &s, bool) {
         return seconds([&] { return readFilesPlain(s.paths, o.block, [](size_t, uint64_t, std::string_view d) { touch(d); }, error); });
       }, {}},
      {"io_uring reader (default: IOSQE_ASYNC, every read through the ring)", viaReader(reader({false, true, false})), {}},
      {"io_uring reader, without IOSQE_ASYNC", viaReader(reader({false, false, false})), {}},
      {"io_uring reader, page cache first (RWF_NOWAIT), IOSQE_ASYNC", viaReader(reader({false, true, true})), {}},
      {"io_uring reader, O_DIRECT", viaReader(reader({true, false, false})), {}},
      {"same queue, no resume bookkeeping", unordered(rawBuffered, false), {}},
      {"same queue, O_DIRECT, no resume bookkeeping", unordered(rawDirect, true), {}},
      {"fio io_uring, buffered", fio(false), {}},
      {"fio io_uring, direct=1", fio(true), {}},
      {"open + fstat + close only (inside the reader, before fio's clock)",
       [](const DataSet &s, bool) { return openOnly(s); }, {}},
  };

  std::printf("depth %u, block %zu KiB, %d repetitions, medians; ratio = the read() loop's time / this one's\n",
              o.depth, o.block >> 10, o.reps);
  for (bool cold : {true, false}) {
    for (const DataSet &s : sets) {
      for (Method &m : methods)
        m.runs.clear();
      for (int rep = 0; rep < o.reps; ++rep)
        for (Method &m : methods) {
          if (cold)
            dropCaches(s);
          else
            warm(s);
          m.runs.push_back(m.seconds(s, cold));
        }
      double base = median(methods[0].runs);
      std::printf("\n### %s, %s (%.0f MiB)\n\n| method | median | GiB/s | ratio to read() |\n|---|---:|---:|---:|\n",
                  s.paths.size() == 1 ? "1 file x 256 MiB" : "2000 files x 64 KiB", cold ? "cold" : "warm",
                  static_cast<double>(s.bytes) / (1 << 20));
      for (Method &m : methods) {
        bool failed = std::any_of(m.runs.begin(), m.runs.end(), [](double t) { return t < 0; });
        if (failed) {
          std::printf("| %s | failed | | |\n", m.name.c_str());
          continue;
        }
        double t = median(m.runs);
        std::printf("| %s | %.1f ms | %.2f | %.2fx |\n", m.name.c_str(), t * 1e3,
                    static_cast<double>(s.bytes) / t / (1u << 30), base / t);
      }
    }
  }
  std::printf("\ncold: %s\n", coldMethod.c_str());
  if (!error.empty())
    std::printf("last error: %s\n", error.c_str());
  std::fprintf(stderr, "(%llu)\n", static_cast<unsigned long long>(touched));
  if (ownDir)
    std::filesystem::remove_all(o.dir);
  return 0;
}
