// The thread that runs a LendingNode on a node: it ticks, then sleeps until the time the tick asked
// for or until an owner enters a phase whose CPUs are lent (the worker's futex wake on its control
// page's phase word; futex_waitv waits on every owner's at once, where the kernel has it, else the
// loop polls). It runs SCHED_FIFO where it may, so that a reclaim is not queued behind the spinning
// borrower it takes CPUs from. Everything it decides is LendingNode's, on the system clock; this is
// the wiring, proved by real-time tests and the benchmark.
#pragma once

#include "executor/lending/LendingNode.h"

#include <functional>
#include <mutex>
#include <thread>

namespace msc::exec::lending {

class LendingLoop {
public:
  // `onErrors` is called, on the loop's thread, with what a tick could not do.
  LendingLoop(LendingNode &node, std::function<void(const std::vector<std::string> &)> onErrors = {});
  ~LendingLoop(); // stops and joins
  LendingLoop(const LendingLoop &) = delete;
  LendingLoop &operator=(const LendingLoop &) = delete;

  void start();
  void stop();
  // Runs `change` on the node between ticks (add or remove an owner or a borrower, read its loans),
  // then wakes the loop so that the change is acted on now.
  void withNode(const std::function<void(LendingNode &)> &change);
  // The owners' phase words the loop waits on; set by withNode's callers after adding an owner.
  void watch(std::vector<std::atomic<uint32_t> *> words);
  bool realtime() const { return realtime_.load(std::memory_order_relaxed); }
  uint64_t ticks() const { return ticks_.load(std::memory_order_relaxed); }

private:
  void run();
  void waitUntil(uint64_t deadlineNs);

  LendingNode &node_;
  std::function<void(const std::vector<std::string> &)> onErrors_;
  std::mutex mutex_; // the node and `words_`
  std::vector<std::atomic<uint32_t> *> words_;
  std::atomic<uint32_t> kick_{0}; // a futex word of the loop's own: changes and stop wake it
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> ticks_{0};
  std::atomic<bool> realtime_{false};
  std::thread thread_;
};

} // namespace msc::exec::lending
