// The worker side of the executor, header-only so any worker (C++ or through a tiny C shim) can use
// it without linking the executor: pin a role's threads to the CPUs the plan gave the role, name
// them, and map the role's hugepage pool. Reads the variables the appliers set:
//   MSCALE_ROLE_<ROLE>_CPUS="0-3", MSCALE_POOL_<ROLE>_FD=5, MSCALE_POOL_<ROLE>_BYTES=8388608
// <ROLE> is the role name upper-cased with non-alphanumerics as '_'.
// Under supervision (mscale-exec run) it also finds the control page (MSCALE_CONTROL_FD): the worker
// heartbeats there, reports its step, and learns of GPU slice hand-overs without being stopped.
#pragma once

#include "support/CpuList.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <dlfcn.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <utility>
#include <unistd.h>
#include <vector>

namespace mscale::worker {

// The environment variable that carries `what` of `role`: ("image_loader", "_CPUS") ->
// MSCALE_ROLE_IMAGE_LOADER_CPUS, ("rdma_cache", "POOL_FD") -> MSCALE_POOL_RDMA_CACHE_FD. The
// executor names the variables it sets with this too, so both sides agree by construction.
inline std::string roleVariable(const char *role, const char *what) {
  std::string name = "MSCALE_";
  name += what[0] == 'P' ? "POOL_" : "ROLE_";
  for (const char *p = role; *p; ++p)
    name += std::isalnum(static_cast<unsigned char>(*p)) ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : '_';
  name += what[0] == 'P' ? what + 4 : what; // "POOL_FD" -> "_FD"
  return name;
}

// The CPUs of `role`; empty when the executor gave the role none (or a list that does not parse).
inline std::vector<unsigned> roleCpus(const char *role) {
  const char *v = std::getenv(roleVariable(role, "_CPUS").c_str());
  return v ? msc::parseCpuList(v).value_or(std::vector<unsigned>{}) : std::vector<unsigned>{};
}

// Pins thread or process `tid` (0: the calling thread) to `cpus`. Returns 0 or an errno value.
// The executor pins its workers with this too.
inline int pinToCpus(pid_t tid, const std::vector<unsigned> &cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : cpus)
    CPU_SET(c, &set);
  return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : errno;
}

// Pins the calling thread to the role's CPUs and names it "<role>" (truncated to 15 bytes).
// Returns 0, or an errno value (ENOENT when the role has no CPUs).
inline int pinThisThreadToRole(const char *role) {
  std::vector<unsigned> cpus = roleCpus(role);
  if (cpus.empty())
    return ENOENT;
  if (int rc = pinToCpus(0, cpus))
    return rc;
  std::string name(role);
  name.resize(std::min<size_t>(name.size(), 15));
  pthread_setname_np(pthread_self(), name.c_str());
  return 0;
}

// The inherited fd of the role's hugepage pool, or -1.
inline int poolFd(const char *role) {
  const char *v = std::getenv(roleVariable(role, "POOL_FD").c_str());
  return v ? std::atoi(v) : -1;
}
inline size_t poolBytes(const char *role) {
  const char *v = std::getenv(roleVariable(role, "POOL_BYTES").c_str());
  return v ? static_cast<size_t>(std::strtoull(v, nullptr, 10)) : 0;
}
inline void takeOver();
// Maps the whole pool read-write and shared; nullptr (errno set) when there is none. A warm standby
// waits for the job first (takeOver): the pool is the running worker's memory until then.
inline void *mapPool(const char *role, size_t *bytes = nullptr) {
  takeOver();
  int fd = poolFd(role);
  size_t n = poolBytes(role);
  if (fd < 0 || n == 0) {
    errno = ENOENT;
    return nullptr;
  }
  void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED)
    return nullptr;
  if (bytes)
    *bytes = n;
  return p;
}

// ---- the control page: one shared 4 KiB page between the executor and its worker ------------
// The executor owns it (a memfd), so it outlives a worker that crashes. The worker writes `beats`
// and `step`; the executor writes `slices` then bumps `sliceGeneration`; the worker switches to the
// new slices and stores that generation in `ackGeneration`, after which the old slices are released.
struct ControlPage {
  static constexpr uint64_t kMagic = 0x314c52544343534dull; // "MSCCTRL1" in memory order
  uint64_t magic;
  std::atomic<uint64_t> beats;
  std::atomic<uint64_t> step;
  std::atomic<uint64_t> sliceGeneration;
  std::atomic<uint64_t> ackGeneration;
  std::atomic<uint64_t> slicesSeq; // odd while the executor rewrites `slices` (a seqlock)
  std::atomic<uint64_t> milliTflops; // the worker's own achieved TFLOP/s x 1000, 0 = not reported
  // Non-zero once the worker's work is done and it is exiting (see finishing()).
  std::atomic<uint64_t> finishing;
  char slices[2048]; // MSCALE_GPU_SLICES syntax, NUL-terminated
  // A warm standby (plan fault_tolerance.standby_worker; MSCALE_STANDBY=1): the standby records the
  // device runtimes it has loaded (`standbyRuntimes`), sets `standbyWaiting` and waits on `takeOver`
  // (a futex word) until the executor has written `takeOverEnvironment` and set `takeOver` to 1:
  // it then applies that environment and is the worker.
  std::atomic<uint32_t> standbyWaiting;
  std::atomic<uint32_t> takeOver;
  std::atomic<uint32_t> standbyRuntimes; // kRuntimeCuda | kRuntimeVerbs
  // What the worker said of its failure before exiting (a Failure; failed()), and the error line
  // it gave, NUL-terminated, written before `failure` is stored. Said here, not by an exit status,
  // which the worker's own program may use for anything.
  std::atomic<uint32_t> failure;
  char failureLine[256];
  // "KEY=VALUE\0" to set, "KEY\0" to unset, ..., then an empty entry: MSCALE_RESTART_REASON, and
  // the device placement that changed since the standby started (a GPU move, an RDMA failover).
  char takeOverEnvironment[1536];
  // The job's phase (plan lending.phases; enterPhase()): its number (index + 1; 0 between phases),
  // how many entries so far and the CLOCK_MONOTONIC time of the newest, which the node learns the
  // job's rhythm from. `phaseWake` is the node's: bit N-1 set while it has lent what phase N keeps
  // and not taken it back yet, so that entering phase N must wake it (a futex wake on `phase`). A
  // phase whose resources are home is entered with stores alone.
  std::atomic<uint32_t> phase;
  std::atomic<uint32_t> phaseWake;
  std::atomic<uint64_t> phaseEntries;
  std::atomic<uint64_t> phaseEnteredNs;
  // A borrower's (class = opportunistic; yieldRequested()): before the node freezes a borrower that
  // cooperates it stores when the freeze comes (`yieldByNs`, CLOCK_MONOTONIC), then a new non-zero
  // `yieldAsk`, and wakes `yieldAsk`'s waiters. The borrower gets to a point where it may stop,
  // stores that number in `yieldAck` and waits on `yieldAsk` until the node stores 0 there (lent
  // again, or the notice withdrawn). The node freezes it once it acknowledges, or at `yieldByNs`
  // when it does not. `cooperates` is the worker's: set by its first call of any of these, and only
  // then does the node give notice.
  std::atomic<uint32_t> yieldAsk;
  std::atomic<uint32_t> yieldAck;
  std::atomic<uint32_t> cooperates;
  std::atomic<uint64_t> yieldByNs;
  // A planned stop (a drain; stopAfter()): the executor stores the step S after which the worker is
  // to stop (0 = nothing asked); the worker completes S, commits S's snapshot to the disk tier (the
  // memory tier does not move to another node), stores S in `stoppedAtStep` and exits 0. Every rank
  // of a job is given the same S, so none waits in a collective of step S + 1.
  std::atomic<uint64_t> stopAfterStep;
  std::atomic<uint64_t> stoppedAtStep; // 0 = not stopped
  // A borrower's lent RDMA queue pairs (class = opportunistic, rdma_qps), handed over as slices
  // are: the executor writes `queuePairs` (MSCALE_RDMA syntax, "lent@<device>:<port>:<queue
  // pairs>:<max outstanding>"; empty: let go of them) under the seqlock `queuePairsSeq`, then bumps
  // `queuePairGeneration`; the worker stores that generation in `queuePairAck` once it uses them, or
  // has let go.
  std::atomic<uint64_t> queuePairGeneration;
  std::atomic<uint64_t> queuePairAck;
  std::atomic<uint64_t> queuePairsSeq;
  char queuePairs[88];
};
// Device runtimes a standby had loaded when it began to wait: it may have opened the devices of its
// environment, so their placement can no longer change under it.
constexpr uint32_t kRuntimeCuda = 1;  // libcuda.so.1 (CUDA_VISIBLE_DEVICES, MSCALE_GPU_*)
constexpr uint32_t kRuntimeVerbs = 2; // libibverbs.so.1 (MSCALE_RDMA*)
static_assert(sizeof(ControlPage) <= 4096 && std::atomic<uint64_t>::is_always_lock_free);
// The futex words are 32-bit atomics the kernel reads in place.
static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free);

// Whether this process was started as a warm standby (MSCALE_STANDBY=1) and has not taken over yet.
inline bool standby() {
  const char *v = std::getenv("MSCALE_STANDBY");
  return v && std::strcmp(v, "1") == 0;
}

// The exit status of a standby that cannot be handed the job (it has no control page to wait on).
constexpr int kStandbyExitNoPage = 75;

namespace detail {
inline ControlPage *mapControlPage() {
  static ControlPage *page = [] () -> ControlPage * {
    const char *v = std::getenv("MSCALE_CONTROL_FD");
    if (!v || !*v)
      return nullptr;
    void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, std::atoi(v), 0);
    if (p == MAP_FAILED)
      return nullptr;
    auto *page = static_cast<ControlPage *>(p);
    return page->magic == ControlPage::kMagic ? page : nullptr;
  }();
  return page;
}

// A standby waits here until the executor hands it the job; then the process looks like any
// restarted worker: MSCALE_RESTART_REASON set, MSCALE_STANDBY gone. Nothing for other processes.
inline void waitForTakeOver() {
  if (!standby())
    return;
  ControlPage *c = mapControlPage();
  if (!c)
    _exit(kStandbyExitNoPage); // it could never be released; running on would duplicate the job
  uint32_t runtimes = 0;
  for (auto [library, bit] : {std::pair{"libcuda.so.1", kRuntimeCuda}, std::pair{"libibverbs.so.1", kRuntimeVerbs}})
    if (void *loaded = dlopen(library, RTLD_LAZY | RTLD_NOLOAD)) {
      runtimes |= bit;
      dlclose(loaded);
    }
  c->standbyRuntimes.store(runtimes, std::memory_order_relaxed);
  c->standbyWaiting.store(1, std::memory_order_release);
  while (c->takeOver.load(std::memory_order_acquire) == 0) {
    // Shared (not FUTEX_PRIVATE): the executor wakes it from its own mapping of the page. The
    // timeout only bounds a lost wake-up; the executor's death kills a standby (PDEATHSIG).
    timespec second{1, 0};
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c->takeOver), FUTEX_WAIT, 0u, &second, nullptr, 0);
  }
  char block[sizeof c->takeOverEnvironment];
  std::memcpy(block, c->takeOverEnvironment, sizeof block);
  block[sizeof block - 1] = block[sizeof block - 2] = 0;
  for (char *entry = block; *entry; entry += std::strlen(entry) + 1) {
    if (char *eq = std::strchr(entry, '=')) {
      *eq = 0;
      setenv(entry, eq + 1, 1);
      *eq = '=';
    } else {
      unsetenv(entry);
    }
  }
  unsetenv("MSCALE_STANDBY");
}
} // namespace detail

// Returns once this process may do the worker's work: at once for a worker, and for a warm standby
// (MSCALE_STANDBY=1) when the executor hands it the job after a fault. A standby calls it after
// what takes time and touches nothing shared (start-up, allocating its state) and before it
// restores; everything that uses the control page (heartbeat(), finishing(), ...), mapPool() and the
// snapshot store wait here too, so a standby never runs the job early. It changes the environment
// (setenv): a standby that has started threads must not have them read it meanwhile.
// On return the environment is the attempt's: MSCALE_RESTART_REASON set, and where the job's GPUs
// or RDMA ports moved since the standby started, their variables changed, but only for a runtime
// the standby had not loaded when it began to wait (libcuda, libibverbs): a standby that opens its
// devices before takeOver() stays on them, and a move then starts a new worker instead.
inline void takeOver();

// The page of this worker, or nullptr when it does not run under mscale-exec. A standby waits
// for the job first (takeOver).
inline ControlPage *controlPage() {
  static ControlPage *page = [] {
    detail::waitForTakeOver();
    return detail::mapControlPage();
  }();
  return page;
}

// A worker that is no standby has nothing to wait for (and need not map the page for it).
inline void takeOver() {
  if (standby())
    (void)controlPage();
}

// `step` while a worker restores its snapshot and does not know its step yet.
constexpr uint64_t kStepRestoring = ~uint64_t(0);

// Called at least once per heartbeat interval while the worker makes progress (e.g. every step);
// `step` is the last completed step, or kStepRestoring. No-op without a control page.
inline void heartbeat(uint64_t step) {
  if (ControlPage *c = controlPage()) {
    c->step.store(step, std::memory_order_relaxed);
    c->beats.fetch_add(1, std::memory_order_release);
  }
}

// What a failing worker says of its failure before it exits (ControlPage::failure). The supervisor
// reads it once the worker has exited: the line goes into its log and `contract status`, the kind
// decides whether a restart can help.
enum class Failure : uint32_t {
  None = 0,
  Retryable = 1,       // an error line only: a restart may succeed (the restart policy decides)
  NothingToResume = 2, // a restarted worker found no valid snapshot in any tier (ERR_EXEC_022)
  RetryCannotFix = 3,  // the same job on the same inputs would fail the same way (ERR_EXEC_030)
};

// Says `kind` with `line` (its first line, cut to what the page holds; nullptr keeps the line
// already said). No-op without a control page.
inline void failed(Failure kind, const char *line) {
  ControlPage *c = controlPage();
  if (!c)
    return;
  if (line) {
    size_t n = std::strcspn(line, "\n");
    n = std::min(n, sizeof c->failureLine - 1);
    std::memcpy(c->failureLine, line, n);
    c->failureLine[n] = 0;
  }
  c->failure.store(static_cast<uint32_t>(kind), std::memory_order_release);
}

// The work is done and the worker is exiting: tearing down data loader processes, a process group,
// files. That takes what it takes (seconds on a busy node), without steps to beat for, so from now
// on the supervisor does not take silence for a hang until a generous exit grace has passed.
inline void finishing() {
  if (ControlPage *c = controlPage())
    c->finishing.store(1, std::memory_order_release);
}

// The worker was restarted to resume and found no valid snapshot in any tier: it is exiting, and the
// supervisor stops (ERR_EXEC_022) instead of restarting it again or starting the job from step 1.
inline void nothingToResume(const char *line = nullptr) { failed(Failure::NothingToResume, line); }

// The worker's achieved TFLOP/s (model FLOPs per step / step time). The monitor uses it where the
// backend has no per-slice counter (the cuda driver has none per green context).
inline void reportThroughput(double tflops) {
  if (ControlPage *c = controlPage())
    c->milliTflops.store(tflops > 0 ? static_cast<uint64_t>(tflops * 1000.0) : 0, std::memory_order_relaxed);
}

namespace detail {
// A hand-over (a text under a seqlock, its generation, the worker's acknowledgement) not taken yet:
// true with its generation and text.
template <size_t N>
inline bool pendingHandOver(const std::atomic<uint64_t> &generationWord, const std::atomic<uint64_t> &ackWord,
                            const std::atomic<uint64_t> &seqlock, const char (&text)[N], uint64_t &generation,
                            std::string &out) {
  uint64_t g = generationWord.load(std::memory_order_acquire);
  if (g == ackWord.load(std::memory_order_relaxed))
    return false;
  uint64_t seq = seqlock.load(std::memory_order_acquire);
  if (seq & 1)
    return false; // being rewritten: take it next time
  char copy[N];
  std::memcpy(copy, text, N);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (seqlock.load(std::memory_order_relaxed) != seq || generationWord.load(std::memory_order_acquire) != g)
    return false;
  out.assign(copy, strnlen(copy, N));
  generation = g;
  return true;
}
} // namespace detail

// A GPU slice hand-over the worker has not taken yet: true with the generation and the new
// MSCALE_GPU_SLICES value. The worker moves its work to them, then calls acknowledgeSlices().
inline bool pendingSliceUpdate(uint64_t &generation, std::string &slices) {
  ControlPage *c = controlPage();
  return c && detail::pendingHandOver(c->sliceGeneration, c->ackGeneration, c->slicesSeq, c->slices, generation, slices);
}
inline void acknowledgeSlices(uint64_t generation) {
  if (ControlPage *c = controlPage())
    c->ackGeneration.store(generation, std::memory_order_release);
}

// A borrower's queue-pair hand-over not taken yet: true with the generation and the lent queue
// pairs (MSCALE_RDMA syntax; "": let go of them). The worker connects them, or closes the ones it
// was lent, then calls acknowledgeQueuePairs().
inline bool pendingQueuePairUpdate(uint64_t &generation, std::string &queuePairs) {
  ControlPage *c = controlPage();
  return c && detail::pendingHandOver(c->queuePairGeneration, c->queuePairAck, c->queuePairsSeq, c->queuePairs,
                                      generation, queuePairs);
}
inline void acknowledgeQueuePairs(uint64_t generation) {
  if (ControlPage *c = controlPage())
    c->queuePairAck.store(generation, std::memory_order_release);
}

// ---- a planned stop at a snapshot boundary (a drain; docs/supervision.md) ----------------------
// The step S the executor asks this worker to stop after, 0 when nothing is asked (or there is no
// control page). Loads only: cheap enough to call every step.
inline uint64_t stopRequested() {
  ControlPage *c = controlPage();
  return c ? c->stopAfterStep.load(std::memory_order_acquire) : 0;
}
// Whether the worker, having just completed `step`, is to stop now: the executor asks it to stop
// after exactly this step. A request for a step already passed is not honoured (the worker runs
// on; the executor sees that from the page's `step`), nor is one for a later step yet.
inline bool stopAfter(uint64_t step) {
  return step != 0 && stopRequested() == step;
}
// Called once the snapshot of `step` is committed to the disk tier, just before the worker exits 0:
// the executor then knows the job may resume from step + 1 on another node. Marks the worker as
// finishing (finishing()) too. No-op without a control page.
inline void stoppedAt(uint64_t step) {
  if (ControlPage *c = controlPage()) {
    c->stoppedAtStep.store(step, std::memory_order_release);
    c->finishing.store(1, std::memory_order_release);
  }
}

// ---- phases: where the job is on its demand curve (docs/contract_language.md) -----------------
// The executor names the plan's phases in MSCALE_PHASES ("decode,compute,eval"), in plan order.
constexpr unsigned kMaxPhases = 32; // one bit each in ControlPage::phaseWake
inline const std::vector<std::string> &phaseNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    const char *v = std::getenv("MSCALE_PHASES");
    for (const char *p = v ? v : ""; *p;) {
      const char *end = std::strchr(p, ',');
      size_t n = end ? size_t(end - p) : std::strlen(p);
      if (n && out.size() < kMaxPhases)
        out.emplace_back(p, n);
      p += n + (end ? 1 : 0);
    }
    return out;
  }();
  return names;
}
// The number of phase `name` (1 for the plan's first), or 0 when the plan has no such phase.
inline unsigned phaseNumber(const char *name) {
  const std::vector<std::string> &names = phaseNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return unsigned(i + 1);
  return 0;
}
// Enters phase `number` (0: between phases). Stores on the page, and a futex wake only when the
// node still lends what the phase keeps; no-op without a control page. Returns the phase left.
inline unsigned enterPhase(unsigned number) {
  ControlPage *c = controlPage();
  if (!c)
    return 0;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now); // the vDSO: no system call
  c->phaseEnteredNs.store(uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec), std::memory_order_relaxed);
  c->phaseEntries.fetch_add(1, std::memory_order_relaxed);
  unsigned left = c->phase.exchange(number, std::memory_order_acq_rel);
  if (number && number <= kMaxPhases && (c->phaseWake.load(std::memory_order_acquire) & (1u << (number - 1))))
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c->phase), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  return left;
}
inline unsigned currentPhase() {
  ControlPage *c = controlPage();
  return c ? c->phase.load(std::memory_order_acquire) : 0;
}

// ---- yielding what is lent (a borrower's; docs/executor.md, "Lending") -----------------------
namespace detail {
inline uint64_t monotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
}
inline ControlPage *cooperatingPage() {
  ControlPage *c = controlPage();
  if (c && !c->cooperates.load(std::memory_order_relaxed))
    c->cooperates.store(1, std::memory_order_release);
  return c;
}
} // namespace detail
// How long the node gives this borrower before it freezes it (0 when the time has come), or -1
// when nothing is asked of it. Marks the worker as one that cooperates: the node gives it notice
// from now on. Stores and loads only.
inline int64_t yieldRequestedNs() {
  ControlPage *c = detail::cooperatingPage();
  if (!c || !c->yieldAsk.load(std::memory_order_acquire))
    return -1;
  uint64_t by = c->yieldByNs.load(std::memory_order_relaxed), now = detail::monotonicNs();
  return by > now ? int64_t(by - now) : 0;
}
// Waits until the node asks this borrower to yield or `timeoutNs` has passed (a thread of its own
// may watch for it this way). Whether it was asked.
inline bool waitForYieldRequest(uint64_t timeoutNs) {
  ControlPage *c = detail::cooperatingPage();
  if (!c)
    return false;
  uint64_t deadline = detail::monotonicNs() + timeoutNs;
  while (!c->yieldAsk.load(std::memory_order_acquire)) {
    uint64_t now = detail::monotonicNs();
    if (now >= deadline)
      return false;
    timespec left{time_t((deadline - now) / 1'000'000'000u), long((deadline - now) % 1'000'000'000u)};
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c->yieldAsk), FUTEX_WAIT, 0u, &left, nullptr, 0);
  }
  return true;
}
// Yields what is lent, if the node asked: acknowledges the request (the node freezes the process
// at once) and returns once it is lent CPUs again. Whether it had been asked.
inline bool yieldNow() {
  ControlPage *c = detail::cooperatingPage();
  uint32_t ask = c ? c->yieldAsk.load(std::memory_order_acquire) : 0;
  if (!ask)
    return false;
  c->yieldAck.store(ask, std::memory_order_release);
  while (c->yieldAsk.load(std::memory_order_acquire) == ask)
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&c->yieldAsk), FUTEX_WAIT, ask, nullptr, nullptr, 0);
  return true;
}

} // namespace mscale::worker
