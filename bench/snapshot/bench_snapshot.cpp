// bench_snapshot [--sizes-mib 64,256,1024,4096] [--reps 5] [--dir DIR] [--threads N] [--no-disk]
//                [--steps N]
// For each state size, `reps` rounds; each round measures a baseline and the snapshot operation right
// after it, so both see the same machine load, and the ratio of the round is baseline time / snapshot
// time (1.0 = as fast as the baseline). Printed: the median ratio and the median GB/s (1 GB = 1e9 B).
//   memory tier save     vs memcpy of the state into a warm buffer (one thread, as glibc does it);
//   memory tier restore  (verify + copy into the caller's buffer) vs the same memcpy;
//   both also vs a memcpy split over the same threads as the snapshot uses (--threads, 0: by size);
//   disk tier save       (temp file, fsync, rename, dir fsync) vs raw write of 4 MiB blocks + fsync;
//   disk tier restore    (page cache dropped, verify) vs raw read of 4 MiB blocks, page cache dropped;
//   the disk pairs alternate which one runs first.
// XXH3 and XXH64 alone (one thread) are printed for reference. A final table gives the ratios per size.
// With --steps N > 0, also the step time of mscale-train-sim's workload with periodic snapshots.
#include "tools/mscale-train-sim/Dataset.h"
#include "tools/mscale-train-sim/Trainer.h"
#include "worker/snapshot/ChunkCopy.h"
#include "worker/snapshot/Hash.h"
#include "worker/snapshot/Snapshot.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace msc::snapshot;
namespace fs = std::filesystem;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double timed(const std::function<void()> &fn) {
  double a = now();
  fn();
  return now() - a;
}

void die(const Status &s) {
  if (!s) {
    std::fprintf(stderr, "bench_snapshot: %s\n", s.str().c_str());
    std::exit(1);
  }
}

void dropCache(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

constexpr uint64_t kBlock = 4u << 20;

void rawWrite(const std::string &path, const uint8_t *p, uint64_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (uint64_t off = 0; off < size; off += kBlock)
    if (::write(fd, p + off, std::min(kBlock, size - off)) < 0)
      std::exit(1);
  ::fsync(fd);
  ::close(fd);
}

void rawRead(const std::string &path, uint8_t *p, uint64_t size) {
  int fd = ::open(path.c_str(), O_RDONLY);
  for (uint64_t off = 0; off < size; off += kBlock)
    if (::read(fd, p + off, std::min(kBlock, size - off)) < 0)
      std::exit(1);
  ::close(fd);
}

void parallelMemcpy(uint8_t *dst, const uint8_t *src, uint64_t size, unsigned threads) {
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t)
    helpers.emplace_back([=] {
      uint64_t a = size * t / threads, b = size * (t + 1) / threads;
      std::memcpy(dst + a, src + a, b - a);
    });
  std::memcpy(dst, src, size / threads);
  for (auto &h : helpers)
    h.join();
}

std::string snapFile(const std::string &dir) {
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("snap-", 0) == 0)
      return e.path().string();
  return {};
}

// Per-round ratios (baseline time / operation time) and operation times.
struct Series {
  std::vector<double> ratio, seconds;
  void add(double baseline, double op) {
    ratio.push_back(baseline / op);
    seconds.push_back(op);
  }
};

struct Result {
  double memSave = 0, memRestore = 0, memSaveVsThreads = 0, memRestoreVsThreads = 0, diskSave = 0,
         diskRestore = 0;
};

} // namespace

int main(int argc, char **argv) {
  std::vector<uint64_t> sizesMiB = {64, 256, 1024, 4096};
  int reps = 5;
  unsigned threadsOpt = 0;
  bool disk = true;
  std::string dir = "bench-snapshot.tmp";
  uint64_t steps = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--sizes-mib") {
      sizesMiB.clear();
      for (char *t = std::strtok(argv[++i], ","); t; t = std::strtok(nullptr, ","))
        sizesMiB.push_back(std::strtoull(t, nullptr, 10));
    } else if (a == "--reps") {
      reps = std::atoi(v), ++i;
    } else if (a == "--threads") {
      threadsOpt = static_cast<unsigned>(std::atoi(v)), ++i;
    } else if (a == "--dir") {
      dir = v, ++i;
    } else if (a == "--steps") {
      steps = std::strtoull(v, nullptr, 10), ++i;
    } else if (a == "--no-disk") {
      disk = false;
    } else {
      std::fprintf(stderr, "bench_snapshot: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // progress shows when the output goes to a file
  fs::create_directories(dir);
  struct utsname u;
  ::uname(&u);
  double load[3] = {};
  (void)::getloadavg(load, 3);
  std::printf("machine: %s %s, %ld cores, dir %s, %d rounds per size (medians), load %.2f %.2f %.2f\n", u.machine,
              u.release, ::sysconf(_SC_NPROCESSORS_ONLN), dir.c_str(), reps, load[0], load[1], load[2]);
  const std::string shm = "msc-bench-snap-" + std::to_string(::getpid());
  std::map<uint64_t, Result> results;
  for (uint64_t mib : sizesMiB) {
    const uint64_t size = mib << 20;
    const double gb = static_cast<double>(size) / 1e9;
    const unsigned threads = threadsOpt ? threadsOpt : threadsFor(size);
    std::vector<uint8_t> src(size);
    uint64_t s = 1;
    for (uint64_t i = 0; i + 8 <= size; i += 8) {
      uint64_t v = msc::workload::splitmix64(s);
      std::memcpy(&src[i], &v, 8);
    }
    std::vector<uint8_t> dst(size, 1); // warm: the memcpy baseline's destination and the restore's
    std::printf("\n== state %llu MiB, %u thread(s) per blob ==\n", static_cast<unsigned long long>(mib), threads);
    auto row = [&](const char *what, const Series &x, const char *vs) {
      std::printf("  %-46s %7.2f GB/s  (%.3f s)", what, gb / median(x.seconds), median(x.seconds));
      if (vs)
        std::printf("  %.2f x %s", median(x.ratio), vs);
      std::printf("\n");
    };
    Series xxh3, xxh64;
    std::vector<uint64_t> chunkHashes(chunkCount(size));
    for (int r = 0; r < reps; ++r) {
      xxh3.add(1, timed([&] { copyAndHashChunks(nullptr, src.data(), size, 1, chunkHashes.data()); }));
      xxh64.add(1, timed([&] { (void)hash64(src.data(), size); }));
    }
    row("XXH3 chunks alone, 1 thread", xxh3, nullptr);
    row("XXH64 alone (format 1's blob hash)", xxh64, nullptr);

    SnapshotMeta meta;
    std::vector<BlobView> blobs = {{"model", BlobKind::Model, src.data(), size}};
    auto intoDst = [&](const std::string &, BlobKind, uint64_t) -> void * { return dst.data(); };
    Series memcpy1, memcpyN, save, saveN, restore, restoreN;
    double first;
    {
      StoreOptions o;
      o.memoryName = shm;
      o.memorySlots = 1;
      o.threads = threads;
      o.useEnvFd = false;
      std::unique_ptr<Store> st;
      die(Store::open(o, st));
      meta.step = 1;
      first = timed([&] { die(st->save(meta, blobs)); });
      for (int r = 0; r < reps; ++r) {
        double tm = timed([&] { std::memcpy(dst.data(), src.data(), size); });
        double tmN = timed([&] { parallelMemcpy(dst.data(), src.data(), size, threads); });
        ++meta.step;
        double ts = timed([&] { die(st->save(meta, blobs)); });
        save.add(tm, ts);
        saveN.add(tmN, ts);
        double tr = timed([&] {
          Restored rs;
          die(st->restoreLatest(rs, intoDst));
        });
        restore.add(tm, tr);
        restoreN.add(tmN, tr);
        memcpy1.add(1, tm);
        memcpyN.add(1, tmN);
      }
      st->destroyMemoryTier();
    }
    if (std::memcmp(dst.data(), src.data(), size) != 0) {
      std::fprintf(stderr, "bench_snapshot: the restored state differs from the saved one\n");
      return 1;
    }
    std::printf("  %-46s %7.2f GB/s  (%.3f s)\n", "memory tier save, first (fresh pages)", gb / first, first);
    row("memcpy, 1 thread (baseline)", memcpy1, nullptr);
    row("memcpy, split over the snapshot's threads", memcpyN, nullptr);
    row("memory tier save", save, "memcpy");
    row("memory tier restore (verify + copy out)", restore, "memcpy");
    std::printf("  %-46s %.2f / %.2f x the threaded memcpy\n", "memory tier save / restore", median(saveN.ratio),
                median(restoreN.ratio));
    Result &res = results[mib];
    res.memSave = median(save.ratio);
    res.memRestore = median(restore.ratio);
    res.memSaveVsThreads = median(saveN.ratio);
    res.memRestoreVsThreads = median(restoreN.ratio);
    if (!disk)
      continue;

    std::string raw = dir + "/raw.bin";
    StoreOptions o;
    o.diskDir = dir + "/snaps";
    o.memoryTier = false;
    o.keep = 1;
    std::unique_ptr<Store> st;
    die(Store::open(o, st));
    Series rawW, dSave, rawR, dRestore;
    for (int r = 0; r < reps; ++r) {
      // The shared virtual disk absorbs a burst of writes faster than the next one: every other round
      // runs the snapshot first, so neither side always gets the rested device.
      const bool snapshotFirst = r % 2;
      double tw = 0, ts = 0;
      auto baselineWrite = [&] {
        fs::remove(raw);
        tw = timed([&] { rawWrite(raw, src.data(), size); });
      };
      auto snapshotWrite = [&] {
        ++meta.step;
        ts = timed([&] { die(st->save(meta, blobs)); });
      };
      snapshotFirst ? (snapshotWrite(), baselineWrite()) : (baselineWrite(), snapshotWrite());
      dSave.add(tw, ts);
      rawW.add(1, tw);
      double tr = 0, tl = 0;
      auto baselineRead = [&] {
        dropCache(raw);
        tr = timed([&] { rawRead(raw, dst.data(), size); });
      };
      auto snapshotRead = [&] {
        dropCache(snapFile(o.diskDir));
        tl = timed([&] {
          Restored rs;
          die(st->restoreLatest(rs, intoDst));
        });
      };
      snapshotFirst ? (snapshotRead(), baselineRead()) : (baselineRead(), snapshotRead());
      dRestore.add(tr, tl);
      rawR.add(1, tr);
    }
    fs::remove(raw);
    fs::remove_all(o.diskDir);
    row("raw write + fsync, 4 MiB blocks (baseline)", rawW, nullptr);
    row("disk tier save (tmp, fsync, rename, dir fsync)", dSave, "raw write");
    row("raw read, page cache dropped (baseline)", rawR, nullptr);
    row("disk tier restore, page cache dropped", dRestore, "raw read");
    res.diskSave = median(dSave.ratio);
    res.diskRestore = median(dRestore.ratio);
  }

  std::printf("\n== ratios (median of %d rounds; aims: memory >= 0.80 x memcpy, disk >= 0.90 x raw) ==\n", reps);
  std::printf("  %9s  %12s  %15s  %22s  %15s  %17s\n", "state MiB", "mem save", "mem restore", "vs threaded memcpy",
              "disk save", "disk restore");
  for (const auto &[mib, r] : results)
    std::printf("  %9llu  %12.2f  %15.2f  %10.2f / %-9.2f  %15.2f  %17.2f\n", static_cast<unsigned long long>(mib),
                r.memSave, r.memRestore, r.memSaveVsThreads, r.memRestoreVsThreads, r.diskSave, r.diskRestore);
  (void)::getloadavg(load, 3);
  std::printf("load at the end: %.2f %.2f %.2f\n", load[0], load[1], load[2]);

  if (steps) {
    // Step-time overhead of periodic snapshots on the proof workload.
    std::string data = dir + "/data";
    std::string err;
    if (!msc::workload::generateDataset(data, 2400, 8, err)) {
      std::fprintf(stderr, "bench_snapshot: %s\n", err.c_str());
      return 1;
    }
    std::printf("\n== mscale-train-sim workload, %llu steps, batch 8, +64 MiB optimizer state ==\n",
                static_cast<unsigned long long>(steps));
    struct Mode {
      const char *name;
      uint64_t every;
      bool memory, disk, background;
    } modes[] = {{"snapshots off", 0, false, false, false},
                 {"every 10 steps, memory tier", 10, true, false, false},
                 {"every 10 steps, memory + disk", 10, true, true, false},
                 {"every 10 steps, memory + disk in background", 10, true, true, true},
                 {"every 50 steps, memory + disk", 50, true, true, false},
                 {"every 50 steps, memory + disk in background", 50, true, true, true}};
    double base = 0;
    for (const Mode &m : modes) {
      std::vector<double> t;
      for (int r = 0; r < reps; ++r)
        t.push_back(timed([&] {
          msc::workload::TrainerOptions o;
          o.dataDir = data;
          o.steps = steps;
          o.snapshotEvery = m.every;
          o.memoryTier = m.memory;
          o.memoryName = m.memory ? shm : "";
          o.snapshotDir = m.disk ? dir + "/wl-snaps" : "";
          o.stateMiB = 64;
          o.backgroundDisk = m.background;
          o.quiet = true;
          if (msc::workload::runTrainer(o) != 0)
            std::exit(1);
          fs::remove_all(dir + "/wl-snaps");
          ::shm_unlink(("/" + shm).c_str());
        }));
      double med = median(t);
      if (base == 0)
        base = med;
      std::printf("  %-44s %8.3f ms/step  overhead %+6.1f%%\n", m.name, med * 1e3 / double(steps),
                  (med / base - 1) * 100);
    }
  }
  fs::remove_all(dir);
  return 0;
}
