// bench_snapshot [--sizes-gib 1,4] [--reps 3] [--dir DIR] [--data DIR --steps N]
// Prints medians (GB/s, 1 GB = 1e9 B) for, per state size:
//   memcpy (warm destination) vs memory-tier save/restore (XXH64 included);
//   raw write+fsync in 4 MiB blocks (dd bs=4M conv=fsync) vs disk-tier save (temp file, fsync, rename);
//   raw cold read (pages dropped with fadvise) vs disk-tier restore (cold), and XXH64 alone.
// Then the step time of mscale-train-sim's workload with snapshots off / every 10 steps to memory /
// to both tiers (with --state-mib 64 of extra optimizer state).
#include "tools/mscale-train-sim/Dataset.h"
#include "tools/mscale-train-sim/Trainer.h"
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
#include <string>
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

// Median seconds of `reps` runs of fn (setup runs before each, untimed).
double timeIt(int reps, const std::function<void()> &fn, const std::function<void()> &setup = {}) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    if (setup)
      setup();
    double a = now();
    fn();
    t.push_back(now() - a);
  }
  return median(t);
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

void rawWrite(const std::string &path, const uint8_t *p, uint64_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (uint64_t off = 0; off < size; off += 4 << 20)
    if (::write(fd, p + off, std::min<uint64_t>(4 << 20, size - off)) < 0)
      std::exit(1);
  ::fsync(fd);
  ::close(fd);
}

void rawRead(const std::string &path, uint8_t *p, uint64_t size) {
  int fd = ::open(path.c_str(), O_RDONLY);
  for (uint64_t off = 0; off < size; off += 4 << 20)
    if (::read(fd, p + off, std::min<uint64_t>(4 << 20, size - off)) < 0)
      std::exit(1);
  ::close(fd);
}

std::string snapFile(const std::string &dir) {
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("snap-", 0) == 0)
      return e.path().string();
  return {};
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> sizes = {1, 4};
  int reps = 3;
  std::string dir = "bench-snapshot.tmp";
  uint64_t steps = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--sizes-gib") {
      sizes.clear();
      for (char *t = std::strtok(argv[i + 1], ","); t; t = std::strtok(nullptr, ","))
        sizes.push_back(std::atoi(t));
    } else if (a == "--reps") {
      reps = std::atoi(argv[i + 1]);
    } else if (a == "--dir") {
      dir = argv[i + 1];
    } else if (a == "--steps") {
      steps = std::strtoull(argv[i + 1], nullptr, 10);
    }
  }
  fs::create_directories(dir);
  struct utsname u;
  ::uname(&u);
  std::printf("machine: %s %s, %ld cores, dir %s, reps %d (medians)\n", u.machine, u.release,
              ::sysconf(_SC_NPROCESSORS_ONLN), dir.c_str(), reps);
  const std::string shm = "msc-bench-snap-" + std::to_string(::getpid());
  for (int gib : sizes) {
    const uint64_t size = uint64_t(gib) << 30;
    const double gb = static_cast<double>(size) / 1e9;
    std::vector<uint8_t> src(size);
    uint64_t s = 1;
    for (uint64_t i = 0; i + 8 <= size; i += 8) {
      uint64_t v = msc::workload::splitmix64(s);
      std::memcpy(&src[i], &v, 8);
    }
    std::printf("\n== state %d GiB ==\n", gib);
    auto row = [&](const char *what, double sec) { std::printf("  %-44s %7.2f GB/s  (%.3f s)\n", what, gb / sec, sec); };
    double tHash = timeIt(reps, [&] { (void)hash64(src.data(), size); });
    row("XXH64 alone", tHash);
    double tMemcpy;
    {
      std::vector<uint8_t> dst(size, 1);
      tMemcpy = timeIt(reps, [&] { std::memcpy(dst.data(), src.data(), size); });
    }
    row("memcpy (baseline, warm destination)", tMemcpy);

    SnapshotMeta meta;
    std::vector<BlobView> blobs = {{"model", BlobKind::Model, src.data(), size}};
    double tMemSave, tMemRestore, tMemFirst;
    {
      StoreOptions o;
      o.memoryName = shm;
      o.memorySlots = 1;
      std::unique_ptr<Store> st;
      die(Store::open(o, st));
      meta.step = 1;
      double a = now();
      die(st->save(meta, blobs));
      tMemFirst = now() - a;
      tMemSave = timeIt(reps, [&] {
        ++meta.step;
        die(st->save(meta, blobs));
      });
      tMemRestore = timeIt(reps, [&] {
        Restored r;
        die(st->restoreLatest(r, [&](const std::string &, BlobKind, uint64_t) { return src.data(); }));
      });
      st->destroyMemoryTier();
    }
    row("memory tier save, first (pages faulted in)", tMemFirst);
    row("memory tier save", tMemSave);
    row("memory tier restore (verify + copy out)", tMemRestore);

    std::string raw = dir + "/raw.bin";
    double tRawW = timeIt(reps, [&] { rawWrite(raw, src.data(), size); }, [&] { fs::remove(raw); });
    dropCache(raw);
    double tRawR = timeIt(reps, [&] { rawRead(raw, src.data(), size); }, [&] { dropCache(raw); });
    fs::remove(raw);
    row("raw write+fsync, 4 MiB blocks (dd baseline)", tRawW);
    row("raw read, cold (baseline)", tRawR);

    double tDiskSave, tDiskRestore, tDiskRestoreWarm;
    {
      StoreOptions o;
      o.diskDir = dir + "/snaps";
      o.memoryTier = false;
      o.keep = 1;
      std::unique_ptr<Store> st;
      die(Store::open(o, st));
      tDiskSave = timeIt(reps, [&] {
        ++meta.step;
        die(st->save(meta, blobs));
      });
      auto restore = [&] {
        Restored r;
        die(st->restoreLatest(r, [&](const std::string &, BlobKind, uint64_t) { return src.data(); }));
      };
      tDiskRestore = timeIt(reps, restore, [&] { dropCache(snapFile(o.diskDir)); });
      tDiskRestoreWarm = timeIt(reps, restore);
      fs::remove_all(o.diskDir);
    }
    row("disk tier save (tmp, fsync, rename, dir fsync)", tDiskSave);
    row("disk tier restore, cold (verify)", tDiskRestore);
    row("disk tier restore, page cache warm (verify)", tDiskRestoreWarm);
    std::printf("  ratios: memory save/memcpy %.2f, memory restore/memcpy %.2f, disk save/raw write %.2f, "
                "disk restore/raw read %.2f\n",
                tMemcpy / tMemSave, tMemcpy / tMemRestore, tRawW / tDiskSave, tRawR / tDiskRestore);
  }

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
    bool memory, disk;
  } modes[] = {{"snapshots off", 0, false, false},
               {"every 10 steps, memory tier", 10, true, false},
               {"every 10 steps, memory + disk", 10, true, true},
               {"every 50 steps, memory + disk", 50, true, true}};
  double base = 0;
  for (const Mode &m : modes) {
    double t = timeIt(reps, [&] {
      msc::workload::TrainerOptions o;
      o.dataDir = data;
      o.steps = steps;
      o.snapshotEvery = m.every;
      o.memoryTier = m.memory;
      o.memoryName = m.memory ? shm : "";
      o.snapshotDir = m.disk ? dir + "/wl-snaps" : "";
      o.stateMiB = 64;
      o.quiet = true;
      if (msc::workload::runTrainer(o) != 0)
        std::exit(1);
      fs::remove_all(dir + "/wl-snaps");
      ::shm_unlink(("/" + shm).c_str());
    });
    if (base == 0)
      base = t;
    std::printf("  %-32s %8.3f ms/step  overhead %+6.1f%%\n", m.name, t * 1e3 / double(steps), (t / base - 1) * 100);
  }
  fs::remove_all(dir);
  return 0;
}
