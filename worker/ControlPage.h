// The executor's side of the worker control page (the worker's side and the layout: WorkerApi.h): a
// sealed-size memfd the worker inherits as MSCALE_CONTROL_FD. It lives as long as the executor, across
// worker restarts, so the step a crashed worker last reported is still readable.
#pragma once

#include "worker/WorkerApi.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace msc::worker {

// Publishes a slice hand-over on `page` (MSCALE_GPU_SLICES syntax; empty: let go of every slice):
// returns its generation, 0 when the text does not fit the page. The worker acknowledges it by
// storing that generation in `ackGeneration`.
uint64_t publishSlices(mscale::worker::ControlPage &page, const std::string &slices);
// Publishes a borrower's queue-pair hand-over on `page` (MSCALE_RDMA syntax; empty: let go of
// them): returns its generation, 0 when the text does not fit the page. The worker acknowledges it
// by storing that generation in `queuePairAck`.
uint64_t publishQueuePairs(mscale::worker::ControlPage &page, const std::string &queuePairs);

class ControlPageHost {
public:
  // nullptr with `error` when memfd_create or mmap fails.
  static std::unique_ptr<ControlPageHost> create(std::string &error);
  ~ControlPageHost();
  ControlPageHost(const ControlPageHost &) = delete;
  ControlPageHost &operator=(const ControlPageHost &) = delete;

  int fd() const { return fd_; }
  // The page itself, for the node's lending loop, which reads the worker's phase and publishes
  // which entries must wake it (executor/lending/LendingNode.h).
  mscale::worker::ControlPage *page() const { return page_; }
  uint64_t beats() const { return page_->beats.load(std::memory_order_acquire); }
  uint64_t step() const { return page_->step.load(std::memory_order_relaxed); }
  bool finishing() const { return page_->finishing.load(std::memory_order_acquire) != 0; }
  // What the worker said of its failure (WorkerApi.h: failed()); None with an empty line when it
  // said nothing.
  mscale::worker::Failure failure() const;
  std::string failureLine() const;
  double reportedTflops() const { return double(page_->milliTflops.load(std::memory_order_relaxed)) / 1000.0; }
  // Publishes a slice hand-over; returns its generation, 0 when the text does not fit the page.
  uint64_t publishSlices(const std::string &slices) { return worker::publishSlices(*page_, slices); }
  bool acknowledged(uint64_t generation) const {
    return page_->ackGeneration.load(std::memory_order_acquire) >= generation;
  }
  // A planned stop (a drain; WorkerApi.h: stopAfter()): asks the worker to stop after `step`, 0
  // withdraws the request; what is asked; the step the worker said it stopped at once that step's
  // snapshot was committed to disk (0: it has not stopped).
  void requestStopAfter(uint64_t step) { page_->stopAfterStep.store(step, std::memory_order_release); }
  uint64_t stopRequestedAfter() const { return page_->stopAfterStep.load(std::memory_order_acquire); }
  uint64_t stoppedAt() const { return page_->stoppedAtStep.load(std::memory_order_acquire); }
  // A new worker starts with the slices it is given in its environment, and with no stop asked.
  void resetForNewWorker(); // also forgets the previous worker's throughput and any standby state

  // A warm standby on this page (WorkerApi.h: takeOver): whether it waits for the job yet, the
  // device runtimes it had loaded then (mscale::worker::kRuntime*; 0 before it waits), and handing
  // it the job with the variables to set (a value) or unset (none) first.
  using Environment = std::vector<std::pair<std::string, std::optional<std::string>>>;
  bool standbyWaiting() const { return page_->standbyWaiting.load(std::memory_order_acquire) != 0; }
  uint32_t standbyRuntimes() const {
    return standbyWaiting() ? page_->standbyRuntimes.load(std::memory_order_relaxed) : 0;
  }
  // Whether `environment` fits the page (encodable); handOverToStandby needs it to.
  static bool fits(const Environment &environment);
  void handOverToStandby(const Environment &environment);
  // This page takes over from `previous` (the failed worker's): the last step it reported and the
  // slice notice generation, so that every rank's page goes on in lockstep. Not a stop request or a
  // stop: those were the previous worker's.
  void continueFrom(const ControlPageHost &previous);

private:
  ControlPageHost() = default;
  int fd_ = -1;
  mscale::worker::ControlPage *page_ = nullptr;
};

} // namespace msc::worker
