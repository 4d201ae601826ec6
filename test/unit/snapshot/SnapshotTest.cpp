// The snapshot library: round trips through both tiers, newest-valid selection, keep-K, torn and
// corrupt snapshots skipped (never loaded), writers killed half-way, the memfd hand-over, and one test
// per ERR_SNAP code the library emits.
#include "worker/snapshot/Hash.h"
#include "worker/snapshot/Snapshot.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

namespace fs = std::filesystem;
using namespace msc::snapshot;

namespace {

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 g(seed);
  for (auto &b : v)
    b = static_cast<uint8_t>(g());
  return v;
}

class SnapshotTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/msc-snaptest-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
    shm = "msc-snaptest-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    model = pattern(1 << 20, 1);
    momentum = pattern(300000, 2);
    rng = pattern(16, 3);
    ::unsetenv("MSCALE_SNAPSHOT_MEMFD");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
    ::shm_unlink(("/" + shm).c_str());
    ::unsetenv("MSCALE_SNAPSHOT_MEMFD");
  }
  StoreOptions options(bool memory = true, bool disk = true) {
    StoreOptions o;
    o.diskDir = disk ? dir + "/snaps" : "";
    o.memoryTier = memory;
    o.memoryName = shm;
    return o;
  }
  std::unique_ptr<Store> open(const StoreOptions &o) {
    std::unique_ptr<Store> s;
    Status st = Store::open(o, s);
    EXPECT_TRUE(st.ok()) << st.str();
    return s;
  }
  SnapshotMeta meta(uint64_t step) {
    SnapshotMeta m;
    m.step = step;
    m.loader = {"data/shard-003.dat", 4096 + step, 42, step / 7, 3, step * 8};
    m.lr = {"warmup-cosine", 0.2, 0.2 / double(step + 1), step, {10, 100, 0.01}};
    m.lossScale.scale = 8192;
    m.lossScale.growthTracker = step % 10;
    m.lossScale.history = {{0, 4096}, {10, 8192}};
    return m;
  }
  std::vector<BlobView> blobs(uint64_t step) {
    model[0] = static_cast<uint8_t>(step); // each step's model differs
    return {{"model", BlobKind::Model, model.data(), model.size()},
            {"optimizer.momentum", BlobKind::Optimizer, momentum.data(), momentum.size()},
            {"rng", BlobKind::Rng, rng.data(), rng.size()},
            {"empty", BlobKind::Other, nullptr, 0}};
  }
  std::string file(uint64_t step) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "/snaps/snap-%020llu.msnap", static_cast<unsigned long long>(step));
    return dir + buf;
  }
  void flipByte(const std::string &path, off_t at) {
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    uint8_t b;
    ASSERT_EQ(::pread(fd, &b, 1, at), 1);
    b ^= 0x5a;
    ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
    ::close(fd);
  }
  // Runs `fn` in a child process; returns its wait status.
  template <class F> int inChild(F fn) {
    pid_t pid = ::fork();
    if (pid == 0) {
      fn();
      _exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }

  std::string dir, shm;
  std::vector<uint8_t> model, momentum, rng;
  static inline int counter = 0;
};

// A memory tier named after its disk directory belongs to that directory, not to its path: a job
// whose directory was removed and made again starts afresh, even where the old region is still in
// /dev/shm (a node that did not reboot).
TEST_F(SnapshotTest, ADirectoryMadeAgainUnderTheSamePathDoesNotResumeTheOldMemoryTier) {
  StoreOptions o = options();
  o.memoryName.clear();
  auto store = open(o);
  ASSERT_TRUE(store->save(meta(801), blobs(801)).ok());
  std::string first = store->memoryTierName();
  store.reset();
  auto again = open(o);
  Restored r;
  ASSERT_TRUE(again->restoreLatest(r).ok()) << "the same directory resumes from its memory";
  EXPECT_EQ(r.tier, Tier::Memory);
  again.reset();

  fs::remove_all(dir + "/snaps");
  auto fresh = open(o);
  std::string second = fresh->memoryTierName();
  EXPECT_NE(second, first);
  Restored none;
  EXPECT_FALSE(fresh->restoreLatest(none).ok()) << "resumed step " << none.meta.step << " of a removed directory";
  fresh.reset();
  for (const std::string &name : {first, second}) // "shm:/msc-snap-..."
    ::shm_unlink(name.substr(name.find('/')).c_str());
}

TEST_F(SnapshotTest, RoundTripPrefersMemoryThenDisk) {
  auto store = open(options());
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  Restored r;
  Status s = store->restoreLatest(r);
  ASSERT_TRUE(s.ok()) << s.str();
  EXPECT_EQ(r.tier, Tier::Memory);
  EXPECT_EQ(r.meta, meta(10));
  ASSERT_EQ(r.blobs.size(), 4u);
  std::vector<uint8_t> got(model.size());
  ASSERT_TRUE(r.copyBlob("model", got.data(), got.size()).ok());
  EXPECT_EQ(got, model);
  ASSERT_NE(r.find("rng"), nullptr);
  EXPECT_EQ(std::memcmp(r.find("rng")->data, rng.data(), rng.size()), 0);
  EXPECT_EQ(r.find("rng")->kind, BlobKind::Rng);
  EXPECT_EQ(r.find("empty")->size, 0u);

  // Node loss: the memory tier is gone; the disk tier has the same snapshot and says so.
  store->destroyMemoryTier();
  store.reset();
  auto diskOnly = open(options(false, true));
  Restored d;
  ASSERT_TRUE(diskOnly->restoreLatest(d).ok());
  EXPECT_EQ(d.tier, Tier::Disk);
  EXPECT_EQ(d.source, file(10));
  EXPECT_EQ(d.meta, meta(10));
  EXPECT_EQ(std::memcmp(d.find("model")->data, model.data(), model.size()), 0);
}

TEST_F(SnapshotTest, RestoresIntoCallerBuffers) {
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(5), blobs(5)).ok());
  auto expected = model;
  std::vector<uint8_t> mine(model.size());
  Restored r;
  ASSERT_TRUE(store
                  ->restoreLatest(r, [&](const std::string &name, BlobKind, uint64_t size) -> void * {
                    return name == "model" && size == mine.size() ? mine.data() : nullptr;
                  })
                  .ok());
  EXPECT_EQ(r.find("model")->data, mine.data());
  EXPECT_TRUE(r.find("model")->owned.empty());
  EXPECT_EQ(mine, expected);
}

TEST_F(SnapshotTest, NewestAcrossTiersWins) {
  auto store = open(options());
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20), static_cast<uint32_t>(Tier::Disk)).ok());
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 20u);
  EXPECT_EQ(r.tier, Tier::Disk);
  ASSERT_TRUE(store->save(meta(30), blobs(30), static_cast<uint32_t>(Tier::Memory)).ok());
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 30u);
  EXPECT_EQ(r.tier, Tier::Memory);
  EXPECT_EQ(r.find("model")->owned[0], 30);
}

// The all-ranks rule of a distributed job: a rank restores the newest step every rank committed,
// even when it has newer ones itself; a bound below every snapshot is "nothing to restore".
TEST_F(SnapshotTest, RestoreAtMostAStep) {
  auto store = open(options());
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20)).ok());
  Restored r;
  ASSERT_TRUE(store->restoreAtMost(15, r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  EXPECT_EQ(r.find("model")->owned[0], 10);
  ASSERT_TRUE(store->restoreAtMost(20, r).ok());
  EXPECT_EQ(r.meta.step, 20u);
  EXPECT_EQ(store->restoreAtMost(9, r).code, ErrorCode::ERR_SNAP_003);
}

TEST_F(SnapshotTest, KeepsTheLastK) {
  auto o = options(true, true);
  o.keep = 2;
  auto store = open(o);
  for (uint64_t s = 1; s <= 5; ++s)
    ASSERT_TRUE(store->save(meta(s), blobs(s)).ok());
  std::vector<uint64_t> disk, mem;
  for (const auto &i : store->list())
    (i.tier == Tier::Disk ? disk : mem).push_back(i.step);
  EXPECT_EQ(disk, (std::vector<uint64_t>{5, 4}));
  EXPECT_EQ(mem, (std::vector<uint64_t>{5, 4})); // two memory slots
  EXPECT_FALSE(fs::exists(file(3)));
}

TEST_F(SnapshotTest, CorruptBlobIsSkippedNeverLoaded) { // ERR_SNAP_006
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20)).ok());
  flipByte(file(20), 4096 + 12345); // inside blob "model"
  Restored r;
  Status s = store->restoreLatest(r);
  ASSERT_TRUE(s.ok()) << s.str();
  EXPECT_EQ(r.meta.step, 10u);
  EXPECT_EQ(r.find("model")->owned[0], 10);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].step, 20u);
  EXPECT_EQ(r.skipped[0].reason.code, ErrorCode::ERR_SNAP_006);
  EXPECT_EQ(r.skipped[0].reason.str(),
            "error[ERR_SNAP_006]: snapshot '" + file(20) + "' is corrupt: checksum mismatch in blob 'model'");
  EXPECT_EQ(verifyFile(file(20)).code, ErrorCode::ERR_SNAP_006);
  EXPECT_TRUE(verifyFile(file(10)).ok());
}

TEST_F(SnapshotTest, CorruptManifestAndHeaderAreSkipped) {
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20)).ok());
  ASSERT_TRUE(store->save(meta(30), blobs(30)).ok());
  flipByte(file(30), static_cast<off_t>(fs::file_size(file(30)) - 32 - 10)); // manifest tail
  flipByte(file(20), 20);                                                    // header
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_NE(r.skipped[0].reason.message.find("the manifest"), std::string::npos) << r.skipped[0].reason.str();
  EXPECT_NE(r.skipped[1].reason.message.find("the header"), std::string::npos) << r.skipped[1].reason.str();
}

TEST_F(SnapshotTest, TornFileIsSkipped) { // ERR_SNAP_005
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20)).ok());
  ASSERT_EQ(::truncate(file(20).c_str(), static_cast<off_t>(fs::file_size(file(20)) - 100)), 0);
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].reason.code, ErrorCode::ERR_SNAP_005);
  EXPECT_NE(r.skipped[0].reason.message.find("its header says"), std::string::npos) << r.skipped[0].reason.str();
}

TEST_F(SnapshotTest, WriterDyingMidDiskWriteLeavesPreviousValid) {
  auto o = options(false, true);
  ASSERT_TRUE(open(o)->save(meta(10), blobs(10)).ok());
  int status = inChild([&] {
    auto c = o;
    c.crashAfterBytes = model.size() / 2;
    std::unique_ptr<Store> s;
    if (Store::open(c, s).ok())
      (void)s->save(meta(20), blobs(20));
    _exit(1); // not reached when the hook fires
  });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 86) << "the crash hook did not fire";
  size_t temporaries = 0;
  for (const auto &e : fs::directory_iterator(dir + "/snaps"))
    temporaries += e.path().filename().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(temporaries, 1u);
  EXPECT_FALSE(fs::exists(file(20)));
  auto store = open(o); // removes the dead writer's temporary
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  EXPECT_TRUE(r.skipped.empty());
  temporaries = 0;
  for (const auto &e : fs::directory_iterator(dir + "/snaps"))
    temporaries += e.path().filename().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(temporaries, 0u);
}

TEST_F(SnapshotTest, WriterDyingMidMemoryWriteLeavesPreviousSlotValid) {
  auto o = options(true, false);
  ASSERT_TRUE(open(o)->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(open(o)->save(meta(20), blobs(20)).ok());
  int status = inChild([&] {
    auto c = o;
    c.crashAfterBytes = model.size() / 2;
    std::unique_ptr<Store> s;
    if (Store::open(c, s).ok())
      (void)s->save(meta(30), blobs(30));
    _exit(1);
  });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 86);
  Restored r;
  ASSERT_TRUE(open(o)->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 20u); // the slot of 10 was overwritten, 20's survived
  EXPECT_EQ(r.tier, Tier::Memory);
  EXPECT_EQ(r.find("model")->owned[0], 20);
}

TEST_F(SnapshotTest, OneMemorySlotDyingMidWriteFallsBackToDisk) {
  auto o = options(true, true);
  o.memorySlots = 1;
  ASSERT_TRUE(open(o)->save(meta(10), blobs(10)).ok());
  int status = inChild([&] {
    auto c = o;
    c.crashAfterBytes = 1000;
    std::unique_ptr<Store> s;
    if (Store::open(c, s).ok())
      (void)s->save(meta(20), blobs(20), static_cast<uint32_t>(Tier::Memory));
    _exit(1);
  });
  ASSERT_EQ(WEXITSTATUS(status), 86);
  Restored r;
  ASSERT_TRUE(open(o)->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  EXPECT_EQ(r.tier, Tier::Disk);
}

// kill -9 from outside at arbitrary moments while a writer saves 32 MiB snapshots in a loop: every
// restore afterwards finds a valid snapshot and no torn or corrupt one is ever loaded.
// DISABLED: it fails intermittently (seen under ASan timing): a restore returned the step-1
// metadata with a blob byte of a later step, i.e. a torn memory-tier snapshot got through. That is
// a real bug, tracked on issue #7; run it with --gtest_also_run_disabled_tests while fixing it.
TEST_F(SnapshotTest, KillNineAtRandomMomentsNeverYieldsATornSnapshot) {
  auto o = options(true, true);
  o.keep = 2;
  std::vector<uint8_t> big = pattern(32 << 20, 11);
  // Every image carries its step in its first byte; the check below compares the two. A writer
  // killed before its first save completes leaves step 1 the newest, so it must be marked too.
  big[0] = 1;
  ASSERT_TRUE(open(o)->save(meta(1), {{"big", BlobKind::Model, big.data(), big.size()}}).ok());
  std::mt19937 g(1234);
  uint64_t lastSeen = 1;
  for (int round = 0; round < 6; ++round) {
    pid_t pid = ::fork();
    if (pid == 0) {
      std::unique_ptr<Store> s;
      if (!Store::open(o, s).ok())
        _exit(2);
      for (uint64_t step = 100 * (round + 1);; ++step) {
        big[0] = static_cast<uint8_t>(step);
        if (!s->save(meta(step), {{"big", BlobKind::Model, big.data(), big.size()}}).ok())
          _exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30 + g() % 200));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer exited on its own: " << status;
    Restored r;
    Status s = open(o)->restoreLatest(r);
    ASSERT_TRUE(s.ok()) << s.str();
    EXPECT_TRUE(r.skipped.empty()) << r.skipped[0].reason.str();
    EXPECT_EQ(r.find("big")->owned[0], static_cast<uint8_t>(r.meta.step));
    EXPECT_GE(r.meta.step, lastSeen);
    lastSeen = r.meta.step;
  }
}

TEST_F(SnapshotTest, NothingValidIsAnError) { // ERR_SNAP_004
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  flipByte(file(10), 4096 + 7);
  Restored r;
  Status s = store->restoreLatest(r);
  EXPECT_EQ(s.code, ErrorCode::ERR_SNAP_004);
  EXPECT_EQ(s.str(), "error[ERR_SNAP_004]: no valid snapshot: 1 found, every one is torn or corrupt");
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].reason.code, ErrorCode::ERR_SNAP_006);
}

TEST_F(SnapshotTest, NothingAtAllIsAnError) { // ERR_SNAP_003
  auto store = open(options());
  Restored r;
  Status s = store->restoreLatest(r);
  EXPECT_EQ(s.code, ErrorCode::ERR_SNAP_003);
  EXPECT_NE(s.message.find("the memory tier (shm:/" + shm + ")"), std::string::npos) << s.str();
  EXPECT_NE(s.message.find(dir + "/snaps"), std::string::npos) << s.str();
}

TEST_F(SnapshotTest, UnusableDirectory) { // ERR_SNAP_002
  std::ofstream(dir + "/plainfile") << "x";
  StoreOptions o;
  o.diskDir = dir + "/plainfile/snaps";
  o.memoryTier = false;
  std::unique_ptr<Store> s;
  Status st = Store::open(o, s);
  EXPECT_EQ(st.code, ErrorCode::ERR_SNAP_002);
  EXPECT_EQ(st.str(), "error[ERR_SNAP_002]: cannot use snapshot directory '" + o.diskDir + "': Not a directory");
}

TEST_F(SnapshotTest, WriteFailureIsReportedAndLeavesNothingBehind) { // ERR_SNAP_001
  auto o = options(false, true);
  ASSERT_TRUE(open(o)->save(meta(10), blobs(10)).ok());
  int status = inChild([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {256 << 10, 256 << 10}; // files may not grow past 256 KiB: write() fails EFBIG
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::unique_ptr<Store> s;
    if (!Store::open(o, s).ok())
      _exit(2);
    Status st = s->save(meta(20), blobs(20));
    _exit(st.code == ErrorCode::ERR_SNAP_001 && st.message.find("File too large") != std::string::npos ? 0 : 1);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/snaps"), fs::directory_iterator()), 1);
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::vector<uint8_t> bytes(fs::file_size(path));
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char *>(bytes.data()),
                                             static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// The disk file written in the background from a memory slot is the file a synchronous save writes.
TEST_F(SnapshotTest, BackgroundDiskWriteWritesTheSameFile) {
  auto sync = options(false, true);
  sync.diskDir = dir + "/sync";
  auto o = options();
  o.backgroundDisk = true;
  for (uint32_t slots : {1u, 2u}) { // one slot: each save first waits for the disk write reading it
    o.memorySlots = slots;
    auto store = open(o);
    auto reference = open(sync);
    for (uint64_t step : {10, 20, 30, 40}) {
      ASSERT_TRUE(store->save(meta(step), blobs(step)).ok());
      ASSERT_TRUE(reference->save(meta(step), blobs(step)).ok());
    }
    ASSERT_TRUE(store->flush().ok());
    for (uint64_t step : {20, 30, 40}) { // keep = 3
      EXPECT_TRUE(verifyFile(file(step)).ok()) << step;
      char name[64];
      std::snprintf(name, sizeof name, "/sync/snap-%020llu.msnap", static_cast<unsigned long long>(step));
      EXPECT_TRUE(readFile(file(step)) == readFile(dir + name)) << slots << " slots, step " << step;
    }
    EXPECT_FALSE(fs::exists(file(10)));
    store->destroyMemoryTier(); // node loss: the disk tier answers
    Restored r;
    ASSERT_TRUE(store->restoreLatest(r).ok());
    EXPECT_EQ(r.tier, Tier::Disk);
    EXPECT_EQ(r.meta, meta(40));
    fs::remove_all(dir + "/snaps");
    fs::remove_all(dir + "/sync");
  }
}

TEST_F(SnapshotTest, BackgroundDiskWriteFailureComesBackFromFlush) { // ERR_SNAP_001
  auto o = options();
  o.backgroundDisk = true;
  int status = inChild([&] {
    std::unique_ptr<Store> s;
    if (!Store::open(o, s).ok() || !s->save(meta(10), blobs(10), static_cast<uint32_t>(Tier::Memory)).ok())
      _exit(2); // the memory region is sized before the limit below
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {256 << 10, 256 << 10}; // files may not grow past 256 KiB: write() fails EFBIG
    ::setrlimit(RLIMIT_FSIZE, &lim);
    if (!s->save(meta(20), blobs(20)).ok()) // the memory tier committed; the disk write is under way
      _exit(3);
    Status st = s->flush();
    if (st.code != ErrorCode::ERR_SNAP_001 || st.message.find("File too large") == std::string::npos)
      _exit(4);
    _exit(s->flush().ok() ? 0 : 5); // reported once
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/snaps"), fs::directory_iterator()), 0);
}

TEST_F(SnapshotTest, BadMemoryTierHandOver) { // ERR_SNAP_007
  ::setenv("MSCALE_SNAPSHOT_MEMFD", "seven", 1);
  std::unique_ptr<Store> s;
  Status st = Store::open(options(), s);
  EXPECT_EQ(st.code, ErrorCode::ERR_SNAP_007);
  EXPECT_EQ(st.str(), "error[ERR_SNAP_007]: cannot open the in-memory snapshot tier 'MSCALE_SNAPSHOT_MEMFD=seven': "
                      "not a file descriptor number");
  ::setenv("MSCALE_SNAPSHOT_MEMFD", "987", 1); // not open
  st = Store::open(options(), s);
  EXPECT_EQ(st.code, ErrorCode::ERR_SNAP_007);
  EXPECT_NE(st.message.find("Bad file descriptor"), std::string::npos) << st.str();
}

TEST_F(SnapshotTest, HandedInRegionTooSmall) { // ERR_SNAP_008
  int fd = ::memfd_create("msc-snaptest-small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 64 << 10), 0);
  ASSERT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK), 0); // the executor's pool has a fixed size
  auto o = options(true, true);
  o.memoryFd = fd;
  auto store = open(o);
  Status s = store->save(meta(10), blobs(10));
  EXPECT_EQ(s.code, ErrorCode::ERR_SNAP_008);
  EXPECT_NE(s.str().find("per slot"), std::string::npos) << s.str();
  Restored r; // the disk tier was still written
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.tier, Tier::Disk);
  ::close(fd);
}

// The executor creates the region (a hugepage memfd in production), hands it to each worker it starts
// through MSCALE_SNAPSHOT_MEMFD, and keeps it across worker restarts.
TEST_F(SnapshotTest, MemfdHandedOverSurvivesTheWorker) {
  int fd = ::memfd_create("msc-snaptest-pool", 0);
  ASSERT_GE(fd, 0);
  ::setenv("MSCALE_SNAPSHOT_MEMFD", std::to_string(fd).c_str(), 1);
  int status = inChild([&] {
    std::unique_ptr<Store> s;
    if (!Store::open(options(true, false), s).ok())
      _exit(2);
    _exit(s->save(meta(40), blobs(40)).ok() && s->memoryTierName() == "memfd:" + std::to_string(fd) ? 0 : 1);
  });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto store = open(options(true, false));
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 40u);
  EXPECT_EQ(r.tier, Tier::Memory);
  EXPECT_EQ(r.source.rfind("memfd:", 0), 0u) << r.source;
  EXPECT_EQ(::fcntl(fd, F_GETFD), 0) << "the caller's fd must stay open";
  ::close(fd);
}

namespace {
long hugepagesFree() {
  std::ifstream mi("/proc/meminfo");
  std::string line;
  long freePages = 0;
  while (std::getline(mi, line))
    if (line.rfind("HugePages_Free:", 0) == 0)
      freePages = std::atol(line.c_str() + 15);
  return freePages;
}

// Reserves `extra` more 2 MiB pages for the test (as root, the way the executor does) and gives
// them back at the end.
class HugepageReservation {
public:
  explicit HugepageReservation(long extra) {
    std::ifstream in(kPath);
    in >> before_;
    std::ofstream(kPath) << before_ + extra;
  }
  ~HugepageReservation() { std::ofstream(kPath) << before_; }

private:
  static constexpr const char *kPath = "/proc/sys/vm/nr_hugepages";
  long before_ = 0;
};
} // namespace

TEST_F(SnapshotTest, HugepageMemfd) {
  std::optional<HugepageReservation> reservation;
  if (hugepagesFree() < 4 && ::geteuid() == 0)
    reservation.emplace(4 - hugepagesFree());
  if (hugepagesFree() < 4)
    GTEST_SKIP() << "needs 4 free 2 MiB hugepages (HugePages_Free: " << hugepagesFree()
                 << ") and could not reserve them (not root, or the kernel found no contiguous memory)";
  int fd = ::memfd_create("msc-snaptest-huge", MFD_HUGETLB);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::ftruncate(fd, 8 << 20), 0);
  auto o = options(true, false);
  o.memoryFd = fd;
  {
    auto store = open(o);
    ASSERT_TRUE(store->save(meta(50), blobs(50)).ok());
    Restored r;
    ASSERT_TRUE(store->restoreLatest(r).ok());
    EXPECT_EQ(r.meta.step, 50u);
  }
  ::close(fd);
}

TEST_F(SnapshotTest, InvalidRequests) { // ERR_SNAP_009
  auto store = open(options());
  auto b = blobs(1);
  b.push_back(b[0]);
  Status s = store->save(meta(1), b);
  EXPECT_EQ(s.str(), "error[ERR_SNAP_009]: invalid snapshot request: blob 'model' is given twice");
  StoreOptions none;
  none.memoryTier = false;
  std::unique_ptr<Store> x;
  EXPECT_EQ(Store::open(none, x).code, ErrorCode::ERR_SNAP_009);
}

// Rewrites the header of the snapshot at `path` to say format `version` (with a valid header hash).
void setFormatVersion(const std::string &path, uint32_t version) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t h[64];
  ASSERT_EQ(::pread(fd, h, 64, 0), 64);
  std::memcpy(h + 8, &version, 4);
  uint64_t hh = hash64(h, 56);
  std::memcpy(h + 56, &hh, 8);
  ASSERT_EQ(::pwrite(fd, h, 64, 0), 64);
  ::close(fd);
}

TEST_F(SnapshotTest, UnknownFormatVersionsAreSkipped) { // ERR_SNAP_010
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20)).ok());
  ASSERT_TRUE(store->save(meta(30), blobs(30)).ok());
  setFormatVersion(file(30), 3); // as a newer library would write it
  setFormatVersion(file(20), 0); // never written by any library
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[0].reason.str(), "error[ERR_SNAP_010]: snapshot '" + file(30) +
                                           "' has format version 3; this library reads version 1 or 2");
  EXPECT_EQ(r.skipped[1].reason.str(), "error[ERR_SNAP_010]: snapshot '" + file(20) +
                                           "' has format version 0; this library reads version 1 or 2");
}

// Turns a format-2 snapshot file into the format-1 file an older library wrote for the same state:
// every blob hash becomes the XXH64 of the whole blob, then the manifest, trailer and header hashes
// follow (docs/recovery.md, "Format").
void rewriteAsVersion1(const std::string &path) {
  std::vector<uint8_t> f(fs::file_size(path));
  {
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char *>(f.data()), static_cast<std::streamsize>(f.size()));
  }
  uint64_t moff, msize;
  std::memcpy(&moff, f.data() + 32, 8);
  std::memcpy(&msize, f.data() + 40, 8);
  size_t pos = moff;
  auto u32 = [&] { uint32_t v; std::memcpy(&v, f.data() + pos, 4); pos += 4; return v; };
  auto skip = [&](size_t n) { pos += n; };
  auto str = [&] { skip(u32()); };
  skip(8), str(), skip(5 * 8);          // step, loader
  str(), skip(3 * 8), skip(8 * u32());  // LR scheduler
  skip(2 * 8), skip(16 * u32());        // loss scale
  for (uint32_t n = u32(); n; --n) {
    str(), skip(4);
    uint64_t off, size;
    std::memcpy(&off, f.data() + pos, 8);
    std::memcpy(&size, f.data() + pos + 8, 8);
    uint64_t h = hash64(f.data() + off, size);
    std::memcpy(f.data() + pos + 16, &h, 8);
    skip(24);
  }
  ASSERT_EQ(pos, moff + msize);
  uint64_t mh = hash64(f.data() + moff, msize);
  uint8_t *t = f.data() + f.size() - 32;
  std::memcpy(t + 16, &mh, 8);
  uint64_t th = hash64(t, 24);
  std::memcpy(t + 24, &th, 8);
  std::memcpy(f.data() + 48, &mh, 8);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<char *>(f.data()),
                                                                static_cast<std::streamsize>(f.size()));
  setFormatVersion(path, 1);
}

TEST_F(SnapshotTest, FormatVersion1StillRestores) {
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20)).ok());
  rewriteAsVersion1(file(10));
  rewriteAsVersion1(file(20));
  Restored r;
  Status s = store->restoreLatest(r);
  ASSERT_TRUE(s.ok()) << s.str();
  EXPECT_EQ(r.meta, meta(20));
  EXPECT_TRUE(r.skipped.empty());
  ASSERT_EQ(r.find("model")->size, model.size());
  EXPECT_EQ(std::memcmp(r.find("model")->data, model.data(), model.size()), 0);
  EXPECT_EQ(std::memcmp(r.find("optimizer.momentum")->data, momentum.data(), momentum.size()), 0);
  // Its blobs are verified too (with XXH64): a flipped byte is found and the older one restored.
  flipByte(file(20), 4096 + static_cast<off_t>(model.size()) - 1);
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].reason.str(),
            "error[ERR_SNAP_006]: snapshot '" + file(20) + "' is corrupt: checksum mismatch in blob 'model'");
}

// The memory tier copies and hashes a blob on several threads, the disk tier one chunk at a time:
// both write the same image, byte for byte.
TEST_F(SnapshotTest, ThreadedMemoryImageEqualsDiskImage) {
  model = pattern(13 * kDigestChunk + 999, 4); // 14 chunks
  auto o = options();
  o.memorySlots = 1;
  o.threads = 4;
  auto store = open(o);
  ASSERT_TRUE(store->save(meta(7), blobs(7)).ok());
  std::vector<uint8_t> disk(fs::file_size(file(7)));
  std::ifstream(file(7), std::ios::binary).read(reinterpret_cast<char *>(disk.data()),
                                               static_cast<std::streamsize>(disk.size()));
  std::vector<uint8_t> mem(disk.size());
  std::ifstream("/dev/shm/" + shm, std::ios::binary)
      .seekg(4096 + 4096) // superblock, then slot 0's header
      .read(reinterpret_cast<char *>(mem.data()), static_cast<std::streamsize>(mem.size()));
  EXPECT_TRUE(mem == disk);
  // One thread restores what four wrote.
  o.threads = 1;
  store.reset();
  store = open(o);
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.tier, Tier::Memory);
  EXPECT_EQ(std::memcmp(r.find("model")->data, model.data(), model.size()), 0);
}

// A blob of several 4 MiB reads: one thread reads ahead while the other hashes what has arrived.
TEST_F(SnapshotTest, LargeBlobRestoresFromDiskAndItsLastChunkIsVerified) {
  model = pattern((12u << 20) + 12345, 6);
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  ASSERT_TRUE(store->save(meta(20), blobs(20)).ok());
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 20u);
  ASSERT_EQ(r.find("model")->size, model.size());
  EXPECT_EQ(std::memcmp(r.find("model")->data, model.data(), model.size()), 0);
  flipByte(file(20), 4096 + static_cast<off_t>(model.size()) - 2); // in the last, short chunk
  ASSERT_TRUE(store->restoreLatest(r).ok());
  EXPECT_EQ(r.meta.step, 10u);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].reason.code, ErrorCode::ERR_SNAP_006);
}

TEST_F(SnapshotTest, CorruptChunkInTheMemoryTierIsDetected) { // ERR_SNAP_006
  model = pattern(8 * kDigestChunk, 5);
  auto o = options();
  o.memorySlots = 1;
  o.threads = 3;
  auto store = open(o);
  ASSERT_TRUE(store->save(meta(7), blobs(7)).ok());
  // A byte in the sixth chunk of "model" in the slot: the memory copy is refused, the disk one restores.
  flipByte("/dev/shm/" + shm, 4096 + 4096 + 4096 + 5 * kDigestChunk + 17);
  std::vector<uint8_t> into(model.size());
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r, [&](const std::string &name, BlobKind, uint64_t) -> void * {
    return name == "model" ? into.data() : nullptr;
  }).ok());
  EXPECT_EQ(r.tier, Tier::Disk);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].tier, Tier::Memory);
  EXPECT_EQ(r.skipped[0].reason.code, ErrorCode::ERR_SNAP_006);
  EXPECT_NE(r.skipped[0].reason.message.find("blob 'model'"), std::string::npos);
  EXPECT_EQ(r.find("model")->data, into.data()); // restored into the caller's buffer, not a copy
  EXPECT_TRUE(into == model);
}

TEST_F(SnapshotTest, MissingBlob) { // ERR_SNAP_011
  auto store = open(options(false, true));
  ASSERT_TRUE(store->save(meta(10), blobs(10)).ok());
  Restored r;
  ASSERT_TRUE(store->restoreLatest(r).ok());
  uint8_t buf[4];
  EXPECT_EQ(r.copyBlob("lr.extra", buf, 4).str(), "error[ERR_SNAP_011]: snapshot of step 10 has no blob 'lr.extra'");
  EXPECT_EQ(r.copyBlob("rng", buf, 4).code, ErrorCode::ERR_SNAP_009); // wrong size
}

TEST(SnapshotCodes, NumbersMatchNames) {
  EXPECT_STREQ(codeName(ErrorCode::ERR_SNAP_001), "ERR_SNAP_001");
  EXPECT_EQ(codeNumber(ErrorCode::ERR_SNAP_001), 1);
  EXPECT_EQ(codeNumber(ErrorCode::ERR_SNAP_012), 12);
  EXPECT_STREQ(codeName(ErrorCode::ERR_SNAP_012), "ERR_SNAP_012");
}

} // namespace
