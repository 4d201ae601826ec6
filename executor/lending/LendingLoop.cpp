#include "executor/lending/LendingLoop.h"

#include <cerrno>
#include <climits>
#include <ctime>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace msc::exec::lending {

namespace {
// Below the kernel's own threads, above every borrower and owner (which run SCHED_OTHER).
constexpr int kRealtimePriority = 10;

timespec toTimespec(uint64_t ns) { return {time_t(ns / 1'000'000'000u), long(ns % 1'000'000'000u)}; }
} // namespace

LendingLoop::LendingLoop(LendingNode &node, std::function<void(const std::vector<std::string> &)> onErrors)
    : node_(node), onErrors_(std::move(onErrors)) {}

LendingLoop::~LendingLoop() { stop(); }

void LendingLoop::start() {
  if (!thread_.joinable())
    thread_ = std::thread([this] { run(); });
}

void LendingLoop::stop() {
  if (!thread_.joinable())
    return;
  stopping_.store(true);
  kick_.fetch_add(1);
  syscall(SYS_futex, &kick_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  thread_.join();
}

void LendingLoop::withNode(const std::function<void(LendingNode &)> &change) {
  {
    std::lock_guard lock(mutex_);
    change(node_);
  }
  kick_.fetch_add(1);
  syscall(SYS_futex, &kick_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void LendingLoop::watch(std::vector<std::atomic<uint32_t> *> words) {
  withNode([&](LendingNode &) { words_ = std::move(words); });
}

void LendingLoop::waitUntil(uint64_t deadlineNs) {
  std::vector<futex_waitv> waiters;
  {
    std::lock_guard lock(mutex_);
    for (std::atomic<uint32_t> *w : words_)
      if (waiters.size() + 1 < FUTEX_WAITV_MAX)
        waiters.push_back({w->load(std::memory_order_acquire), uint64_t(uintptr_t(w)), FUTEX_32, 0});
  }
  waiters.push_back({kick_.load(std::memory_order_acquire), uint64_t(uintptr_t(&kick_)), FUTEX_32 | FUTEX_PRIVATE_FLAG, 0});
  if (stopping_.load())
    return;
  timespec deadline = toTimespec(deadlineNs);
  if (syscall(SYS_futex_waitv, waiters.data(), waiters.size(), 0, &deadline, CLOCK_MONOTONIC) >= 0 || errno != ENOSYS)
    return; // woken, timed out, or a word had moved already (EAGAIN): tick
  // A kernel before 5.16: wait on the loop's own word alone, which the timeout bounds.
  timespec relative{};
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t nowNs = uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
  if (deadlineNs > nowNs)
    relative = toTimespec(deadlineNs - nowNs);
  syscall(SYS_futex, &kick_, FUTEX_WAIT_PRIVATE, uint32_t(waiters.back().val), &relative, nullptr, 0);
}

void LendingLoop::run() {
  sched_param param{};
  param.sched_priority = kRealtimePriority;
  realtime_.store(pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0);
  while (!stopping_.load()) {
    TickResult result;
    {
      std::lock_guard lock(mutex_);
      result = node_.tick();
    }
    ticks_.fetch_add(1, std::memory_order_relaxed);
    if (!result.errors.empty() && onErrors_)
      onErrors_(result.errors);
    waitUntil(result.nextNs);
  }
}

} // namespace msc::exec::lending
