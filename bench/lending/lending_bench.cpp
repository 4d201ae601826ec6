// Lending for real, measured from the owner's side (docs/PERFORMANCE.md): an owner process on CPUs
// 0 and 1 alternates two phases through the worker's C ABI — compute keeps CPU 1, io keeps CPU 0 —
// while a borrower of four spinning threads runs in its cgroup on whatever the node lends, and the
// node (LendingLoop over CgroupLoans, in this process) lends and takes back. At every entry the
// owner itself reads from /proc whether a borrower thread could still run on the CPU it now keeps,
// and how long until none can: the guarantee as the owner sees it, not as the node reports it. The
// same rhythm runs with lead = auto and with lead = 0ms (reclaim on entry), and without lending (the
// static reservation: nothing harvested) as the baseline, in one run. Root; 2 CPUs or more.
//
// The borrowers: spin (four spinning threads), forks (two spinners and a burst of short-lived
// children), hog (children that spin and allocate past the borrower's own memory limit, killed by
// the kernel's OOM in its cgroup and forked again; the owner's memory is watched) and io (threads
// that write and read a file with O_DIRECT as fast as they can, beside spinning ones, on the disk of
// a role the owner's io phase keeps: the node throttles it then, and its IO rate is counted), yield
// (four spinners on a control page of their own that say they cooperate: asked to yield, it
// acknowledges at once, as mscale.yield_now() does) and ignore (the same, never acknowledging: it is
// frozen when the time given is up).
//
//   build/bench/lending_bench [--transitions N] [--rounds R] [--compute-ms M] [--io-ms M] [--bound-us U]
//                             [--borrower spin|forks|hog|io|yield|ignore] [--hog-mib M] [--io-file PATH] [--io-kib K]
#include "executor/lending/CgroupLoans.h"
#include "executor/lending/LendingLoop.h"
#include "executor/lending/ThreadPlacement.h"
#include "support/Clock.h"
#include "worker/ControlPage.h"

#include <algorithm>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace msc;
using namespace msc::exec;
using namespace msc::exec::lending;

namespace {

struct Options {
  unsigned transitions = 10'000; // per case, over all rounds
  unsigned rounds = 5;           // the cases alternate, round after round (this machine is noisy)
  uint64_t computeNs = 6'000'000, ioNs = 3'000'000, boundNs = 2'000'000;
  // spin: four spinning threads; forks: two spinning threads and a burst of short-lived spinning
  // children (one every 2 ms, each for 10 ms), so that the tree changes under every reclaim.
  // hog: two children that spin 1 ms, then allocate and touch 1 MiB, until the OOM killer of the
  // borrower's cgroup (its own memory limit, hogMiB) ends one; the borrower forks another.
  // io: two threads that write and then read ioKiB at random offsets of ioFile (O_DIRECT), two
  // spinning; the owner's io phase keeps the io of a role on that file's disk.
  std::string borrower = "spin";
  uint64_t hogMiB = 64;
  std::string ioFile;     // default: $TMPDIR (else /var/tmp)/lending_bench.<pid>.io, removed after
  uint64_t ioKiB = 64;
  uint64_t ioFileMiB = 64;
  std::string ioDevice;   // the block device ioFile is on (found from it)
};

// What the borrower counts, in memory it shares with the bench (the borrower's side).
struct BorrowerCounts {
  std::atomic<uint64_t> restarts;     // hog: children forked again after one ended
  std::atomic<uint64_t> bytesWritten; // io: completed
  std::atomic<uint64_t> bytesRead;
  std::atomic<uint64_t> ioErrors;
  // io: odd while the node has the borrower throttled (set by the bench once the throttle write
  // returned), and what was both started and completed within one throttled stretch: what the
  // throttle let through, apart from the IO already in flight when it was set.
  std::atomic<uint64_t> throttleEpoch;
  std::atomic<uint64_t> bytesWithinThrottle;
  // hog: when the borrower reaped each hog that ended (CLOCK_MONOTONIC), the newest kKills.
  static constexpr unsigned kKills = 4096;
  uint64_t reapedNs[kKills];
};

// What the owner saw, in memory it shares with the bench: per entry, whether a borrower thread
// could run on the kept CPU at the entry, and the time from the entry until none could.
struct Observed {
  static constexpr unsigned kMax = 1u << 20;
  uint32_t count;
  uint8_t foundLent[kMax];
  uint32_t latencyNs[kMax];
  // From the entry until the owner ran on the CPU it keeps with no borrower thread runnable there:
  // its move there (sched_setaffinity returns once it runs there, which a borrower thread in the
  // kernel on that CPU delays on a kernel without preemption) and the wait above.
  uint32_t readyNs[kMax];
  uint32_t phaseNs[kMax]; // entry to the end of the phase's work
  uint64_t enteredNs[kMax]; // when (CLOCK_MONOTONIC): the node's slow reclaims are explained by it
  // The owner's memory, read from its own /proc before the first entry and after the last.
  uint64_t majorFaults[2], minorFaults[2], rssKiB[2], hwmKiB;
};

uint64_t nowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1'000'000'000u + uint64_t(t.tv_nsec);
}

void pinTo(unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

[[noreturn]] void spin() {
  static std::atomic<uint64_t> sink{0};
  for (;;)
    sink.fetch_add(1, std::memory_order_relaxed);
}

void spinFor(uint64_t ns) {
  uint64_t until = nowNs() + ns;
  while (nowNs() < until) {
  }
}

bool writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return bool(out);
}

// hog: allocates and touches 1 MiB at a time, spinning 1 ms between, never freeing: the borrower's
// memory limit ends it (the OOM killer of its cgroup).
[[noreturn]] void hog() {
  writeText("/proc/self/oom_score_adj", "0"); // its parent is not to be chosen; it is
  constexpr size_t kChunk = 1u << 20;
  for (;;) {
    spinFor(1'000'000);
    void *p = ::mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      continue;
    std::memset(p, 0x5a, kChunk);
  }
}

// io: writes and then reads `kib` at random aligned offsets of `fd` (O_DIRECT: the page cache
// neither absorbs the writes nor serves the reads, and a v1 blkio throttle sees the IO as the
// borrower's), counting what completed.
[[noreturn]] void ioFlood(int fd, uint64_t fileBytes, uint64_t kib, BorrowerCounts *counts, unsigned seed) {
  size_t size = size_t(kib) * 1024;
  void *buffer = nullptr;
  if (::posix_memalign(&buffer, 4096, size) != 0)
    ::_exit(1);
  std::memset(buffer, 0xa5, size);
  std::mt19937_64 random(seed);
  uint64_t blocks = std::max<uint64_t>(1, fileBytes / size);
  auto within = [&](uint64_t epoch) {
    if (epoch % 2 == 1 && counts->throttleEpoch.load(std::memory_order_acquire) == epoch)
      counts->bytesWithinThrottle.fetch_add(size, std::memory_order_relaxed);
  };
  for (;;) {
    off_t at = off_t(random() % blocks * size);
    uint64_t epoch = counts->throttleEpoch.load(std::memory_order_acquire);
    if (::pwrite(fd, buffer, size, at) == ssize_t(size)) {
      counts->bytesWritten.fetch_add(size, std::memory_order_relaxed);
      within(epoch);
    } else {
      counts->ioErrors.fetch_add(1, std::memory_order_relaxed);
    }
    at = off_t(random() % blocks * size);
    epoch = counts->throttleEpoch.load(std::memory_order_acquire);
    if (::pread(fd, buffer, size, at) == ssize_t(size)) {
      counts->bytesRead.fetch_add(size, std::memory_order_relaxed);
      within(epoch);
    } else {
      counts->ioErrors.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// The borrower (Options::borrower), once a byte arrives on `goFd` (written once it is in its cgroup).
// A borrower that cooperates (`page`, its own control page), or says it does and never yields.
[[noreturn]] void cooperate(mscale::worker::ControlPage *page, bool yields) {
  page->cooperates.store(1, std::memory_order_release);
  for (int i = 0; i < 3; ++i)
    std::thread(spin).detach();
  if (!yields)
    spin();
  for (;;) { // between two pieces of work (100 us of spinning), it looks, as yield_requested() does
    spinFor(100'000);
    uint32_t ask = page->yieldAsk.load(std::memory_order_acquire);
    if (!ask)
      continue;
    page->yieldAck.store(ask, std::memory_order_release);
    while (page->yieldAsk.load(std::memory_order_acquire) == ask)
      ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&page->yieldAsk), FUTEX_WAIT, ask, nullptr, nullptr, 0);
  }
}

pid_t startBorrower(int &goFd, const Options &o, BorrowerCounts *counts, mscale::worker::ControlPage *page) {
  const std::string &kind = o.borrower;
  int go[2];
  if (::pipe(go) != 0)
    return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    char byte;
    if (::read(go[0], &byte, 1) != 1)
      ::_exit(1);
    if (kind == "forks") {
      std::thread(spin).detach();
      std::thread(spin).detach();
      for (;;) { // children that spin for 10 ms each, one every 2 ms; reaped as they end
        if (::fork() == 0) {
          uint64_t until = nowNs() + 10'000'000;
          while (nowNs() < until) {
          }
          ::_exit(0);
        }
        ::usleep(2000);
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {
        }
      }
    }
    if (kind == "hog") {
      // Two hogs; each one the OOM killer ends is forked again. The parent is never the one chosen.
      writeText("/proc/self/oom_score_adj", "-1000");
      for (int i = 0; i < 2; ++i)
        if (::fork() == 0)
          hog();
      for (;;) {
        if (::wait(nullptr) < 0 && errno != EINTR)
          ::_exit(1);
        counts->reapedNs[counts->restarts.load(std::memory_order_relaxed) % BorrowerCounts::kKills] = nowNs();
        counts->restarts.fetch_add(1, std::memory_order_release);
        if (::fork() == 0)
          hog();
      }
    }
    if (kind == "yield" || kind == "ignore")
      cooperate(page, kind == "yield");
    if (kind == "io") {
      int fd = ::open(o.ioFile.c_str(), O_RDWR | O_DIRECT);
      if (fd < 0)
        ::_exit(1);
      for (unsigned i = 0; i < 2; ++i)
        std::thread(ioFlood, fd, o.ioFileMiB << 20, o.ioKiB, counts, 17 + i).detach();
      std::thread(spin).detach();
      spin();
    }
    for (int i = 0; i < 3; ++i)
      std::thread(spin).detach();
    spin();
  }
  ::close(go[0]);
  goFd = go[1];
  return pid;
}

// A fixed amount of work, so that an owner slowed by a borrower takes longer (a wall-clock spin
// would not).
uint64_t work(uint64_t iterations) {
  static std::atomic<uint64_t> sink{0};
  for (uint64_t i = 0; i < iterations; ++i)
    sink.fetch_add(i, std::memory_order_relaxed);
  return sink.load(std::memory_order_relaxed);
}

// Iterations of work() per millisecond on this CPU, alone (the borrower is frozen until the first
// phase lends it something).
uint64_t iterationsPerMs() {
  uint64_t best = UINT64_MAX;
  for (int round = 0; round < 5; ++round) {
    uint64_t start = nowNs();
    work(1'000'000);
    best = std::min(best, nowNs() - start);
  }
  return 1'000'000'000'000ull / std::max<uint64_t>(best, 1);
}

// stat's fields after the command (field 3 on): fields[0] is the state.
std::vector<std::string> statFields(const std::string &path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> fields;
  size_t close = text.rfind(')');
  if (close == std::string::npos)
    return fields;
  for (size_t at = close + 2; at < text.size();) {
    size_t space = text.find(' ', at);
    fields.push_back(text.substr(at, space - at));
    at = space == std::string::npos ? text.size() : space + 1;
  }
  return fields;
}

// A "Key:  N kB" line of /proc/self/status, in kB.
uint64_t statusKiB(const char *key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0)
      return std::strtoull(line.c_str() + std::strlen(key), nullptr, 10);
  return 0;
}

// The owner's faults and resident memory now, into slot `at` (0 before, 1 after).
void readOwnerMemory(Observed *observed, int at) {
  std::vector<std::string> f = statFields("/proc/self/stat");
  if (f.size() > 9) { // minflt is stat field 10, majflt 12
    observed->minorFaults[at] = std::strtoull(f[7].c_str(), nullptr, 10);
    observed->majorFaults[at] = std::strtoull(f[9].c_str(), nullptr, 10);
  }
  observed->rssKiB[at] = statusKiB("VmRSS:");
  observed->hwmKiB = statusKiB("VmHWM:");
}

// The owner's worker: it enters a phase (from the CPU it leaves, as a job's next stage is started
// by its last), moves to the CPU the phase keeps, reads the borrower's threads until none can run
// there, and does the phase's work.
[[noreturn]] void ownerWorker(int controlFd, pid_t borrower, const Options &o, Observed *observed) {
  ::setenv("MSCALE_CONTROL_FD", std::to_string(controlFd).c_str(), 1);
  bool forks = o.borrower == "forks" || o.borrower == "hog"; // a tree of processes
  pinTo(1);
  uint64_t perMs = iterationsPerMs();
  observed->count = 0;
  readOwnerMemory(observed, 0);
  for (unsigned i = 0; i < o.transitions && i < Observed::kMax; ++i) {
    bool compute = i % 2 == 0;
    unsigned kept = compute ? 1 : 0;
    uint64_t entered = nowNs();
    mscale::worker::enterPhase(compute ? 1 : 2);
    pinTo(kept);
    uint64_t pinned = nowNs();
    // The borrower's tree as it is now: a forking one changes under every entry.
    auto threads = [&] { return threadsOf(forks ? processTree(borrower) : std::vector<pid_t>{borrower}); };
    bool lent = !runnableOn(threads(), {kept}).empty();
    uint64_t freed = entered;
    if (lent) {
      while (!runnableOn(threads(), {kept}).empty() && nowNs() - entered < 1'000'000'000u) {
      }
      freed = nowNs();
    }
    work(perMs * (compute ? o.computeNs : o.ioNs) / 1'000'000);
    observed->foundLent[i] = lent;
    observed->latencyNs[i] = uint32_t(std::min<uint64_t>(freed - entered, UINT32_MAX));
    observed->readyNs[i] = uint32_t(std::min<uint64_t>(std::max(freed, pinned) - entered, UINT32_MAX));
    observed->phaseNs[i] = uint32_t(std::min<uint64_t>(nowNs() - entered, UINT32_MAX));
    observed->enteredNs[i] = entered;
    observed->count = i + 1;
  }
  readOwnerMemory(observed, 1);
  mscale::worker::enterPhase(0);
  ::_exit(0);
}

// The time the hypervisor took from this VM's CPUs so far (/proc/stat's steal, all CPUs), in ns.
uint64_t stolenNs() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t fields[8] = {};
  in >> cpu;
  for (uint64_t &f : fields)
    in >> f;
  return fields[7] * 1'000'000'000u / uint64_t(sysconf(_SC_CLK_TCK));
}

// The borrower's CPU time so far (utime + stime of its threads and of the children it reaped), from /proc.
uint64_t cpuNsOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos)
    return 0;
  std::vector<std::string> fields;
  size_t at = close + 2;
  while (at < text.size() && fields.size() < 15) {
    size_t space = text.find(' ', at);
    fields.push_back(text.substr(at, space - at));
    at = space == std::string::npos ? text.size() : space + 1;
  }
  if (fields.size() < 15)
    return 0;
  // stat fields 14 and 15, its own; 16 and 17, its children it waited for (a forking borrower's).
  uint64_t ticks = std::stoull(fields[11]) + std::stoull(fields[12]) + std::stoull(fields[13]) + std::stoull(fields[14]);
  return ticks * 1'000'000'000u / uint64_t(sysconf(_SC_CLK_TCK));
}

struct Result {
  std::string name;
  unsigned entries = 0, foundLent = 0, missed = 0;
  std::vector<uint64_t> waitsNs; // entries that found the CPU lent: entry to free
  std::vector<uint64_t> readyNs; // every entry: entry to running on its CPU, free
  unsigned readyMissed = 0;
  std::vector<uint64_t> cyclesNs; // the owner's compute + io, each
  std::vector<double> cycleRatios; // per round: its cycle P50 over the static case's, same round
  std::vector<uint64_t> movesNs, freezeAsksNs; // each cpuset write, each freeze asked (the mechanism's calls)
  double wallS = 0, borrowerCpuS = 0, nodeLentCoreS = 0, stolenS = 0;
  ReclaimStats node;
  bool realtime = false;
  std::vector<std::pair<uint64_t, uint64_t>> rhythm; // per phase: the interval learnt, the lead
  std::vector<std::string> errors;
  // hog: the OOM kills in the borrower's cgroup (its memory.oom_control / memory.events) and on the
  // whole node (/proc/vmstat), the children it forked again, its peak memory; the owner's faults
  // and resident memory over its entries (its own /proc), and whether it was killed.
  uint64_t oomKills = 0, nodeOomKills = 0, restarts = 0, borrowerPeakBytes = 0;
  uint64_t ownerMajorFaults = 0, ownerMinorFaults = 0, ownerRssFirstKiB = 0, ownerRssLastKiB = 0, ownerHwmKiB = 0;
  unsigned ownerKilled = 0;
  // io: what the borrower completed, by its state as the node set it ([throttled * 2 + lent]):
  // bytes and the time spent in that state; the cgroup's own count; each throttle write, timed.
  uint64_t ioBytes[4] = {}, ioNs[4] = {}, blkioBytes = 0, ioErrors = 0, bytesWithinThrottle = 0;
  std::vector<uint64_t> throttlesNs;
  std::vector<std::string> slow; // the node's reclaims over the bound, each with the mechanism's calls around it
  YieldStats yields;              // yield and ignore: the node's requests to yield, and how they ended
};

// A "KEY N" line of a cgroup or /proc counter file; 0 when it has none.
uint64_t counterIn(const std::string &path, const std::string &key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + " ", 0) == 0)
      return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10);
  return 0;
}

// The borrower's directory of `controller`, as BorrowerCgroup makes it.
std::string borrowerDir(const CgroupLayout &layout, const std::string &controller, const std::string &name) {
  if (reclaimMechanism(layout) == ReclaimMechanism::CgroupV2)
    return layout.v2Mount + "/mscale-borrowers/" + name;
  auto it = layout.v1Mounts.find(controller);
  return it == layout.v1Mounts.end() ? std::string() : it->second + "/mscale-borrowers/" + name;
}

enum class Lead { Auto, Zero, NoLending };

// The cgroups, with the time each change takes in the kernel: where a slow reclaim's time went.
class TimedLoans final : public LoanMechanism {
public:
  // `counts`: an io borrower's, attributed to its state (lent or not, throttled or not) at each change.
  TimedLoans(CgroupLoans &loans, BorrowerCounts *counts) : loans_(loans), counts_(counts) {}
  struct Call {
    uint64_t startNs, tookNs;
    char what; // m: cpuset write, f: freeze asked, F: freeze done (settled), t: throttle set, u: lifted
  };
  bool setCpus(const std::string &borrower, const CpuSet &cpus, std::string &error) override {
    uint64_t start = nowNs();
    mark(start);
    bool ok = loans_.setCpus(borrower, cpus, error);
    (cpus.empty() ? freezeAsksNs : movesNs).push_back(nowNs() - start);
    calls.push_back({start, nowNs() - start, cpus.empty() ? 'f' : 'm'});
    if (ok)
      lent_ = !cpus.empty();
    return ok;
  }
  Settle settle(const std::string &borrower, std::string &error) override {
    uint64_t start = nowNs();
    Settle s = loans_.settle(borrower, error);
    if (s != Settle::Pending)
      calls.push_back({start, nowNs() - start, 'F'});
    return s;
  }
  bool throttleIo(const std::string &borrower, const std::vector<std::string> &devices, std::string &error) override {
    uint64_t start = nowNs();
    mark(start);
    bool ok = loans_.throttleIo(borrower, devices, error);
    throttlesNs.push_back(nowNs() - start);
    calls.push_back({start, nowNs() - start, devices.empty() ? 'u' : 't'});
    if (ok && throttled_ != !devices.empty()) {
      throttled_ = !devices.empty();
      if (counts_) // odd while throttled
        counts_->throttleEpoch.fetch_add(1, std::memory_order_release);
    }
    return ok;
  }
  void end(const std::string &borrower) override { loans_.end(borrower); }
  // What the borrower completed since the last mark, to the state it was in; from the loop's thread,
  // or between its ticks (LendingLoop::withNode).
  void mark(uint64_t now) {
    if (!counts_)
      return;
    uint64_t bytes = counts_->bytesWritten.load(std::memory_order_relaxed) + counts_->bytesRead.load(std::memory_order_relaxed);
    if (lastNs_) {
      ioBytes[throttled_ * 2 + lent_] += bytes - lastBytes_;
      ioNs[throttled_ * 2 + lent_] += now - lastNs_;
    }
    lastNs_ = now;
    lastBytes_ = bytes;
  }
  std::vector<uint64_t> movesNs, freezeAsksNs, throttlesNs;
  std::vector<Call> calls;
  uint64_t ioBytes[4] = {}, ioNs[4] = {};

private:
  CgroupLoans &loans_;
  BorrowerCounts *counts_;
  bool lent_ = false, throttled_ = false;
  uint64_t lastNs_ = 0, lastBytes_ = 0;
};

Result runOnce(const CgroupLayout &layout, const Options &o, Lead lead, Observed *observed, BorrowerCounts *counts) {
  Result r;
  r.name = lead == Lead::Auto ? "lead = auto" : lead == Lead::Zero ? "lead = 0ms" : "no lending (static)";
  // Named for this process: another run of the bench on the node has its own.
  const std::string name = "bench-borrower-" + std::to_string(::getpid());
  std::string error;
  std::unique_ptr<msc::worker::ControlPageHost> host = msc::worker::ControlPageHost::create(error);
  std::unique_ptr<msc::worker::ControlPageHost> borrowerPage = msc::worker::ControlPageHost::create(error);
  CgroupLoans loans(layout);
  BorrowerLimits limits;
  if (o.borrower == "hog")
    limits.memoryBytes = o.hogMiB << 20; // its own limit, as the node sets one for a borrower
  if (!host || !borrowerPage || !loans.add(name, limits, error)) {
    r.errors.push_back(error);
    return r;
  }
  counts->restarts = counts->bytesWritten = counts->bytesRead = counts->ioErrors = 0;
  counts->throttleEpoch = counts->bytesWithinThrottle = 0;
  int go = -1;
  bool cooperative = o.borrower == "yield" || o.borrower == "ignore";
  pid_t borrower = startBorrower(go, o, counts, borrowerPage->page());
  bool joined = loans.join(name, borrower, error);
  if (!joined || ::write(go, "g", 1) != 1) {
    r.errors.push_back(joined ? std::string("the borrower did not start") : error);
    ::kill(borrower, SIGKILL);
    ::waitpid(borrower, nullptr, 0);
    return r;
  }
  ::close(go);

  Owner owner;
  owner.contract = "bench-owner";
  owner.cpus = {0, 1};
  owner.phases = {{"compute", {1}}, {"io", {0}}};
  if (o.borrower == "io") { // its io role's disk: kept in the io phase, and outside phases
    owner.ioDevices = {o.ioDevice};
    owner.phases[1].keptDevices = {o.ioDevice};
  }
  owner.reclaimWithinNs = o.boundNs;
  owner.leadAuto = lead == Lead::Auto;
  SystemClock clock;
  TimedLoans timed(loans, o.borrower == "io" ? counts : nullptr);
  LendingNode node(clock, timed);
  LendingLoop loop(node, [&](const std::vector<std::string> &e) { r.errors.insert(r.errors.end(), e.begin(), e.end()); });
  mscale::worker::ControlPage *page = host->page();
  loop.withNode([&](LendingNode &n) {
    n.addOwner(owner, page);
    if (lead != Lead::NoLending)
      n.addBorrower(name, 2, cooperative ? borrowerPage->page() : nullptr);
  });
  loop.watch({&page->phase});
  loop.start();

  const std::string memoryDir = borrowerDir(layout, "memory", name), ioDir = borrowerDir(layout, "blkio", name);
  bool v2 = reclaimMechanism(layout) == ReclaimMechanism::CgroupV2;
  uint64_t nodeOomBefore = counterIn("/proc/vmstat", "oom_kill");
  uint64_t cpuBefore = cpuNsOf(borrower), start = nowNs(), stolenBefore = stolenNs();
  loop.withNode([&](LendingNode &) { timed.mark(nowNs()); });
  pid_t ownerPid = ::fork();
  if (ownerPid == 0)
    ownerWorker(host->fd(), borrower, o, observed);
  int ownerStatus = 0;
  ::waitpid(ownerPid, &ownerStatus, 0);
  r.ownerKilled = WIFSIGNALED(ownerStatus) ? 1 : 0;
  r.wallS = double(nowNs() - start) / 1e9;
  r.stolenS = double(stolenNs() - stolenBefore) / 1e9;
  r.borrowerCpuS = double(cpuNsOf(borrower) - cpuBefore) / 1e9;
  loop.withNode([&](LendingNode &n) {
    r.node = n.ledger().stats("bench-owner");
    r.yields = n.yieldStats();
    r.nodeLentCoreS = double(n.lentCoreNs()) / 1e9;
    if (const PhaseRhythm *rhythm = n.rhythmOf("bench-owner"))
      for (unsigned phase : {1u, 2u})
        r.rhythm.push_back({rhythm->interval(phase), rhythm->lead(phase, n.reclaimCostNs())});
    timed.mark(nowNs());
    n.removeOwner("bench-owner");
  });
  // The borrower's side, before its cgroups go.
  r.oomKills = counterIn(memoryDir + (v2 ? "/memory.events" : "/memory.oom_control"), "oom_kill");
  r.nodeOomKills = counterIn("/proc/vmstat", "oom_kill") - nodeOomBefore;
  if (std::ifstream peak(memoryDir + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes")); peak)
    peak >> r.borrowerPeakBytes;
  r.restarts = counts->restarts.load();
  r.ioErrors = counts->ioErrors.load();
  r.bytesWithinThrottle = counts->bytesWithinThrottle.load();
  if (v2) {
    std::ifstream stat(ioDir + "/io.stat");
    for (std::string word; stat >> word;)
      if (word.rfind("rbytes=", 0) == 0 || word.rfind("wbytes=", 0) == 0)
        r.blkioBytes += std::strtoull(word.c_str() + 7, nullptr, 10);
  } else {
    r.blkioBytes = counterIn(ioDir + "/blkio.throttle.io_service_bytes", "Total");
  }
  r.ownerMajorFaults = observed->majorFaults[1] - observed->majorFaults[0];
  r.ownerMinorFaults = observed->minorFaults[1] - observed->minorFaults[0];
  r.ownerRssFirstKiB = observed->rssKiB[0];
  r.ownerRssLastKiB = observed->rssKiB[1];
  r.ownerHwmKiB = observed->hwmKiB;
  r.realtime = loop.realtime();
  loop.stop();
  r.movesNs = timed.movesNs;
  r.freezeAsksNs = timed.freezeAsksNs;
  r.throttlesNs = timed.throttlesNs;
  // The node's reclaims over the bound (its ledger keeps every entry's, in order, as the owner made
  // them): what the mechanism did from 2 ms before the entry until the reclaim was done.
  const std::vector<uint64_t> &lat = r.node.latenciesNs;
  for (size_t i = 0; i < lat.size() && i < observed->count && r.slow.size() < 8; ++i) {
    if (lat[i] <= o.boundNs)
      continue;
    uint64_t at = observed->enteredNs[i];
    char line[160];
    std::snprintf(line, sizeof line, "entry %zu (%s) took %.0f us; the mechanism, from the entry:", i,
                  i % 2 == 0 ? "compute" : "io", double(lat[i]) / 1e3);
    std::string text = line;
    for (const TimedLoans::Call &c : timed.calls)
      if (c.startNs + 2'000'000 >= at && c.startNs <= at + lat[i] + 1'000'000) {
        std::snprintf(line, sizeof line, " %c@%+.0f(%.0f us)", c.what, (double(c.startNs) - double(at)) / 1e3,
                      double(c.tookNs) / 1e3);
        text += line;
      }
    // A hog reaped around it: the OOM kill's report is printed (a console at loglevel 4 takes its
    // "Killed process" line) by the task that charged, in the kernel, on the borrower's CPU.
    for (uint64_t k = 0, n = std::min<uint64_t>(counts->restarts.load(std::memory_order_acquire), BorrowerCounts::kKills); k < n; ++k) {
      uint64_t reaped = counts->reapedNs[k];
      if (reaped + 5'000'000 >= at && reaped <= at + lat[i] + 5'000'000) {
        std::snprintf(line, sizeof line, " hog reaped@%+.0f", (double(reaped) - double(at)) / 1e3);
        text += line;
      }
    }
    r.slow.push_back(text);
  }
  std::copy(std::begin(timed.ioBytes), std::end(timed.ioBytes), r.ioBytes);
  std::copy(std::begin(timed.ioNs), std::end(timed.ioNs), r.ioNs);
  loans.remove(name);
  ::waitpid(borrower, nullptr, 0);

  r.entries = observed->count;
  for (unsigned i = 0; i + 1 < observed->count; i += 2)
    r.cyclesNs.push_back(uint64_t(observed->phaseNs[i]) + observed->phaseNs[i + 1]);
  for (unsigned i = 0; i < observed->count; ++i)
    if (observed->foundLent[i]) {
      ++r.foundLent;
      r.waitsNs.push_back(observed->latencyNs[i]);
      r.missed += observed->latencyNs[i] > o.boundNs;
    }
  for (unsigned i = 0; i < observed->count; ++i) {
    r.readyNs.push_back(observed->readyNs[i]);
    r.readyMissed += observed->readyNs[i] > o.boundNs;
  }
  return r;
}

std::string us(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f us", double(ns) / 1e3);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--transitions")
      o.transitions = unsigned(std::atoi(argv[i + 1]));
    else if (a == "--compute-ms")
      o.computeNs = uint64_t(std::atof(argv[i + 1]) * 1e6);
    else if (a == "--io-ms")
      o.ioNs = uint64_t(std::atof(argv[i + 1]) * 1e6);
    else if (a == "--rounds")
      o.rounds = unsigned(std::atoi(argv[i + 1]));
    else if (a == "--bound-us")
      o.boundNs = uint64_t(std::atof(argv[i + 1]) * 1e3);
    else if (a == "--borrower" && (std::string(argv[i + 1]) == "spin" || std::string(argv[i + 1]) == "forks" ||
                                   std::string(argv[i + 1]) == "hog" || std::string(argv[i + 1]) == "io" ||
                                   std::string(argv[i + 1]) == "yield" || std::string(argv[i + 1]) == "ignore"))
      o.borrower = argv[i + 1];
    else if (a == "--hog-mib" && std::atoi(argv[i + 1]) > 0)
      o.hogMiB = uint64_t(std::atoi(argv[i + 1]));
    else if (a == "--io-file")
      o.ioFile = argv[i + 1];
    else if (a == "--io-kib" && std::atoi(argv[i + 1]) >= 4 && std::atoi(argv[i + 1]) % 4 == 0)
      o.ioKiB = uint64_t(std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: lending_bench [--transitions N] [--rounds R] [--compute-ms M] [--io-ms M] [--bound-us U] "
                           "[--borrower spin|forks|hog|io|yield|ignore] [--hog-mib M] [--io-file PATH] [--io-kib K (4 KiB multiple)]\n");
      return 2;
    }
  }
  if (::geteuid() != 0 || std::thread::hardware_concurrency() < 2) {
    std::fprintf(stderr, "lending_bench: needs root (cgroups) and two CPUs\n");
    return 1;
  }
  CgroupLayout layout = CgroupLayout::discover();
  if (reclaimMechanism(layout) == ReclaimMechanism::None) {
    std::fprintf(stderr, "lending_bench: this kernel has %s\n", mechanismName(ReclaimMechanism::None));
    return 1;
  }
  void *shared = mmap(nullptr, sizeof(Observed), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    return 1;
  auto *observed = static_cast<Observed *>(shared);
  void *sharedCounts = mmap(nullptr, sizeof(BorrowerCounts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sharedCounts == MAP_FAILED)
    return 1;
  auto *counts = new (sharedCounts) BorrowerCounts{};

  // io: the file the borrower floods, written through once (O_DIRECT reads of a hole or an unwritten
  // extent would not reach the disk), and the disk it is on: the owner's io role's.
  bool removeIoFile = false;
  if (o.borrower == "io") {
    if (o.ioFile.empty()) {
      const char *tmp = std::getenv("TMPDIR");
      o.ioFile = std::string(tmp && *tmp ? tmp : "/var/tmp") + "/lending_bench." + std::to_string(::getpid()) + ".io";
      removeIoFile = true;
    }
    int fd = ::open(o.ioFile.c_str(), O_WRONLY | O_CREAT, 0600);
    std::vector<char> chunk(1 << 20, 'x');
    bool written = fd >= 0;
    for (uint64_t i = 0; written && i < o.ioFileMiB; ++i)
      written = ::write(fd, chunk.data(), chunk.size()) == ssize_t(chunk.size());
    written = written && ::fsync(fd) == 0;
    struct stat st{};
    written = written && ::fstat(fd, &st) == 0;
    if (fd >= 0)
      ::close(fd);
    char link[4096] = {};
    std::string sys = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    ssize_t n = written ? ::readlink(sys.c_str(), link, sizeof link - 1) : -1;
    if (n <= 0) {
      std::fprintf(stderr, "lending_bench: %s: %s\n", o.ioFile.c_str(),
                   written ? "not on a block device (tmpfs, overlay?): --io-file on a disk" : std::strerror(errno));
      if (removeIoFile)
        ::unlink(o.ioFile.c_str());
      return 1;
    }
    o.ioDevice = std::string(link, size_t(n)).substr(std::string(link, size_t(n)).rfind('/') + 1);
  }

  std::string borrowerText = o.borrower;
  if (o.borrower == "hog")
    borrowerText += " (memory limit " + std::to_string(o.hogMiB) + " MiB)";
  if (o.borrower == "io")
    borrowerText += " (" + std::to_string(o.ioKiB) + " KiB O_DIRECT writes and reads on " + o.ioDevice +
                    ", kept by the io phase)";
  std::printf("%u phase entries a case in %u alternating rounds (compute %.1f ms keeps CPU 1, io %.1f ms keeps CPU 0), bound %s, mechanism %s, borrower %s\n\n",
              o.transitions, o.rounds, double(o.computeNs) / 1e6, double(o.ioNs) / 1e6, us(o.boundNs).c_str(),
              mechanismName(reclaimMechanism(layout)), borrowerText.c_str());
  // Round after round, each case for transitions / rounds entries; a case's numbers are over all
  // its rounds, the owner's slowdown the median of the rounds' ratios to the static case.
  const Lead cases[] = {Lead::NoLending, Lead::Zero, Lead::Auto};
  std::vector<Result> results(3);
  Options round = o;
  round.transitions = std::max(2u, o.transitions / std::max(1u, o.rounds)) & ~1u;
  int status = 0;
  for (unsigned k = 0; k < std::max(1u, o.rounds); ++k) {
    uint64_t staticCycle = 0;
    for (size_t c = 0; c < 3; ++c) {
      Result r = runOnce(layout, round, cases[c], observed, counts);
      for (const std::string &e : r.errors)
        std::fprintf(stderr, "  %s: %s\n", r.name.c_str(), e.c_str());
      for (const std::string &e : r.slow)
        std::fprintf(stderr, "  %s, round %u: %s\n", r.name.c_str(), k + 1, e.c_str());
      if (!r.realtime)
        std::fprintf(stderr, "  %s: the lending loop could not run SCHED_FIFO\n", r.name.c_str());
      status |= r.entries == 0;
      uint64_t cycle = quantile(r.cyclesNs, 0.5);
      if (c == 0)
        staticCycle = cycle;
      Result &all = results[c];
      all.name = r.name;
      all.entries += r.entries;
      all.foundLent += r.foundLent;
      all.missed += r.missed;
      all.waitsNs.insert(all.waitsNs.end(), r.waitsNs.begin(), r.waitsNs.end());
      all.readyNs.insert(all.readyNs.end(), r.readyNs.begin(), r.readyNs.end());
      all.readyMissed += r.readyMissed;
      all.cyclesNs.insert(all.cyclesNs.end(), r.cyclesNs.begin(), r.cyclesNs.end());
      all.cycleRatios.push_back(staticCycle ? double(cycle) / double(staticCycle) : 0.0);
      all.wallS += r.wallS;
      all.stolenS += r.stolenS;
      all.borrowerCpuS += r.borrowerCpuS;
      all.node.entries += r.node.entries;
      all.node.reclaims += r.node.reclaims;
      all.node.missed += r.node.missed;
      all.node.latenciesNs.insert(all.node.latenciesNs.end(), r.node.latenciesNs.begin(), r.node.latenciesNs.end());
      all.rhythm = r.rhythm;
      all.movesNs.insert(all.movesNs.end(), r.movesNs.begin(), r.movesNs.end());
      all.freezeAsksNs.insert(all.freezeAsksNs.end(), r.freezeAsksNs.begin(), r.freezeAsksNs.end());
      all.throttlesNs.insert(all.throttlesNs.end(), r.throttlesNs.begin(), r.throttlesNs.end());
      all.oomKills += r.oomKills;
      all.yields.asked += r.yields.asked;
      all.yields.yielded += r.yields.yielded;
      all.yields.expired += r.yields.expired;
      all.yields.withdrawn += r.yields.withdrawn;
      all.nodeOomKills += r.nodeOomKills;
      all.restarts += r.restarts;
      all.borrowerPeakBytes = std::max(all.borrowerPeakBytes, r.borrowerPeakBytes);
      all.ownerMajorFaults += r.ownerMajorFaults;
      all.ownerMinorFaults += r.ownerMinorFaults;
      if (k == 0)
        all.ownerRssFirstKiB = r.ownerRssFirstKiB;
      all.ownerRssLastKiB = std::max(all.ownerRssLastKiB, r.ownerRssLastKiB);
      all.ownerHwmKiB = std::max(all.ownerHwmKiB, r.ownerHwmKiB);
      all.ownerKilled += r.ownerKilled;
      for (int s = 0; s < 4; ++s) {
        all.ioBytes[s] += r.ioBytes[s];
        all.ioNs[s] += r.ioNs[s];
      }
      all.blkioBytes += r.blkioBytes;
      all.ioErrors += r.ioErrors;
      all.bytesWithinThrottle += r.bytesWithinThrottle;
    }
  }
  if (removeIoFile)
    ::unlink(o.ioFile.c_str());
  auto q = [](const std::vector<uint64_t> &v, double p) { return v.empty() ? std::string("-") : us(quantile(v, p)); };

  std::printf("Seen by the owner (/proc, at each entry):\n\n"
              "| case | entries | found a borrower on its CPU | wait P50 | P99 | P99.99 | max | over the bound | "
              "owner cycle P50 | ÷ static (median of rounds) | harvest | entry to on its CPU, free: P99 | max | over the bound |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Result &r : results) {
    std::vector<double> ratios = r.cycleRatios;
    std::sort(ratios.begin(), ratios.end());
    double ratio = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
    std::printf("| %s | %u | %u (%.2f%%) | %s | %s | %s | %s | %u | %s | %.3f | %.3f | %s | %s | %u |\n", r.name.c_str(), r.entries,
                r.foundLent, r.entries ? 100.0 * r.foundLent / r.entries : 0.0, q(r.waitsNs, 0.5).c_str(),
                q(r.waitsNs, 0.99).c_str(), q(r.waitsNs, 0.9999).c_str(), q(r.waitsNs, 1.0).c_str(), r.missed,
                us(quantile(r.cyclesNs, 0.5)).c_str(), ratio,
                r.wallS > 0 ? r.borrowerCpuS / r.wallS : 0.0, q(r.readyNs, 0.99).c_str(), q(r.readyNs, 1.0).c_str(),
                r.readyMissed);
  }
  std::printf("\nThe kernel's part (each cpuset write and each freeze asked, timed around the call), and the time the "
              "hypervisor stole from this VM's CPUs meanwhile (/proc/stat):\n\n"
              "| case | cpuset writes | P50 | P99 | P99.99 | max | freezes asked | max | stolen |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Result &r : results)
    std::printf("| %s | %zu | %s | %s | %s | %s | %zu | %s | %.0f ms of %.0f s |\n", r.name.c_str(), r.movesNs.size(),
                q(r.movesNs, 0.5).c_str(), q(r.movesNs, 0.99).c_str(), q(r.movesNs, 0.9999).c_str(),
                q(r.movesNs, 1.0).c_str(), r.freezeAsksNs.size(), q(r.freezeAsksNs, 1.0).c_str(), r.stolenS * 1e3, r.wallS);
  std::printf("\nThe node's own account (ReclaimLedger: entry to reclaim done, entries that found CPUs lent):\n\n"
              "| case | entries | found lent | P50 | P99 | P99.99 | missed | lead learnt (compute, io) |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Result &r : results) {
    std::vector<uint64_t> waits;
    for (uint64_t ns : r.node.latenciesNs)
      if (ns)
        waits.push_back(ns);
    std::string leads = "-";
    if (r.rhythm.size() == 2 && r.name == "lead = auto")
      leads = us(r.rhythm[0].second) + ", " + us(r.rhythm[1].second);
    std::printf("| %s | %llu | %llu | %s | %s | %s | %llu | %s |\n", r.name.c_str(), (unsigned long long)r.node.entries,
                (unsigned long long)r.node.reclaims, q(waits, 0.5).c_str(), q(waits, 0.99).c_str(),
                q(waits, 0.9999).c_str(), (unsigned long long)r.node.missed, leads.c_str());
  }
  if (o.borrower == "yield" || o.borrower == "ignore") {
    std::printf("\nThe node's requests to yield (LendingNode::yieldStats):\n\n"
                "| case | asked | yielded | frozen when the time was up | withdrawn |\n|---|---:|---:|---:|---:|\n");
    for (const Result &r : results)
      std::printf("| %s | %llu | %llu | %llu | %llu |\n", r.name.c_str(), (unsigned long long)r.yields.asked,
                  (unsigned long long)r.yields.yielded, (unsigned long long)r.yields.expired,
                  (unsigned long long)r.yields.withdrawn);
  }
  if (o.borrower == "hog") {
    std::printf("\nMemory: the borrower's OOM kills (its cgroup's counter) and the node's (/proc/vmstat), the hogs it "
                "forked again, its peak; the owner's faults and resident memory (its /proc, before its first entry and "
                "after its last):\n\n"
                "| case | OOM kills in the borrower | OOM kills elsewhere | hogs forked again | borrower peak | "
                "owner major faults | owner minor faults | owner RSS first / last / peak | owner killed |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Result &r : results)
      std::printf("| %s | %llu | %lld | %llu | %.1f MiB | %llu | %llu | %llu / %llu / %llu KiB | %u |\n", r.name.c_str(),
                  (unsigned long long)r.oomKills, (long long)r.nodeOomKills - (long long)r.oomKills,
                  (unsigned long long)r.restarts, double(r.borrowerPeakBytes) / double(1 << 20),
                  (unsigned long long)r.ownerMajorFaults, (unsigned long long)r.ownerMinorFaults,
                  (unsigned long long)r.ownerRssFirstKiB, (unsigned long long)r.ownerRssLastKiB,
                  (unsigned long long)r.ownerHwmKiB, r.ownerKilled);
  }
  if (o.borrower == "io") {
    auto rate = [](uint64_t bytes, uint64_t ns) {
      char text[48];
      if (!ns)
        return std::string("-");
      std::snprintf(text, sizeof text, "%.2f MiB/s (%.1f s)", double(bytes) / double(1 << 20) / (double(ns) / 1e9),
                    double(ns) / 1e9);
      return std::string(text);
    };
    std::printf("\nIO: what the borrower completed (its own count, written + read), by its state as the node set it "
                "(the time in that state), the cgroup's count (blkio), and each throttle change, timed:\n\n"
                "| case | lent, not throttled | lent, throttled | frozen, throttled | frozen, not throttled | "
                "started and done while throttled | borrower's total / cgroup's | IO errors | throttle changes | P50 | P99 | max |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Result &r : results) {
      uint64_t total = r.ioBytes[0] + r.ioBytes[1] + r.ioBytes[2] + r.ioBytes[3];
      std::printf("| %s | %s | %s | %s | %s | %s | %.0f / %.0f MiB | %llu | %zu | %s | %s | %s |\n", r.name.c_str(),
                  rate(r.ioBytes[1], r.ioNs[1]).c_str(), rate(r.ioBytes[3], r.ioNs[3]).c_str(),
                  rate(r.ioBytes[2], r.ioNs[2]).c_str(), rate(r.ioBytes[0], r.ioNs[0]).c_str(),
                  rate(r.bytesWithinThrottle, r.ioNs[2] + r.ioNs[3]).c_str(),
                  double(total) / double(1 << 20), double(r.blkioBytes) / double(1 << 20),
                  (unsigned long long)r.ioErrors, r.throttlesNs.size(), q(r.throttlesNs, 0.5).c_str(),
                  q(r.throttlesNs, 0.99).c_str(), q(r.throttlesNs, 1.0).c_str());
    }
  }
  return status;
}
